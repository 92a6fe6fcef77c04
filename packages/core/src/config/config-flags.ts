/**
 * The command-line side of the config bindings: every binding's flag, and its aliases' flags
 * (hidden from `--help`), registered on a commander program from one table, so the edge and the
 * agent take the same flags for the same settings (config-bindings.ts has the naming rule).
 */
import { Option, type Command } from 'commander';
import { bindingHelp, type ConfigBinding } from './config-bindings.js';

/**
 * Registers the flags of `bindings` on `program`.
 * @param short one-letter forms by flag, e.g. `{ '--port': '-p' }`.
 * @returns a reader of the values given on the command line by flag (after `program.parse()`),
 *   for `layerFromFlags`.
 */
export function addBindingFlags(
  program: Command,
  bindings: readonly ConfigBinding[],
  short: Readonly<Record<string, string>> = {},
): () => Map<string, string | undefined> {
  const options: Array<[string, Option]> = [];
  for (const binding of bindings) {
    const letter = short[binding.flag];
    const option = new Option(
      `${letter === undefined ? '' : `${letter}, `}${binding.flag} <value>`,
      bindingHelp(binding),
    );
    program.addOption(option);
    options.push([binding.flag, option]);
    for (const alias of binding.aliases) {
      if (alias.flag === undefined) continue;
      const hidden = new Option(`${alias.flag} <value>`, `same as ${binding.flag}`).hideHelp();
      program.addOption(hidden);
      options.push([alias.flag, hidden]);
    }
  }
  return () =>
    new Map(
      options.map(([flag, option]) => [flag, program.getOptionValue(option.attributeName()) as string | undefined]),
    );
}
