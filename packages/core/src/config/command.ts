/**
 * The one command-line setup every iop command shares (`iop-edge`, `iop-agent`, `iop-sim`,
 * `iop-bench`; commander), so their `--help`, wrapping and errors look the same:
 * - bad usage (an unknown option, an invalid or missing value) prints `error: …` and one hint line
 *   (`(add --help for additional information)`) on stderr and exits 2; `--help` and `--version`
 *   exit 0;
 * - help is wrapped to the terminal's width (80–120 columns; 100 when not a terminal), with the
 *   descriptions in a column after the flags, and a flag longer than that column on a line of
 *   its own with its description below it, so no help line is wider than the width.
 */
import { Command, type Help } from 'commander';

/** Flags up to this width share their line with the description. */
const TERM_COLUMN = 34;

function helpWidth(): number {
  const columns = process.stdout.isTTY ? process.stdout.columns : undefined;
  return columns === undefined ? 100 : Math.min(120, Math.max(80, columns));
}

/** commander's item layout, but a long term goes on its own line instead of pushing the column. */
function formatItem(this: Help, term: string, termWidth: number, description: string, helper: Help): string {
  const indent = '  ';
  if (!description) return indent + term;
  const width = helper.helpWidth ?? 80;
  const descriptionIndent = indent.length + termWidth + 2;
  const wrapped = helper
    .boxWrap(description, width - descriptionIndent)
    .replace(/\n/g, `\n${' '.repeat(descriptionIndent)}`);
  if (helper.displayWidth(term) > termWidth) return `${indent}${term}\n${' '.repeat(descriptionIndent)}${wrapped}`;
  return `${indent}${term.padEnd(termWidth + term.length - helper.displayWidth(term))}  ${wrapped}`;
}

/**
 * A commander program with iop's conventions (above).
 * @param description one paragraph; a second line may say where the settings are documented.
 */
export function iopCommand(name: string, version: string, description: string): Command {
  return new Command(name)
    .exitOverride((error) => process.exit(error.exitCode === 0 ? 0 : 2))
    .version(version)
    .description(description)
    .showHelpAfterError('(add --help for additional information)')
    .configureHelp({
      helpWidth: helpWidth(),
      padWidth: (command, helper) =>
        Math.min(
          TERM_COLUMN,
          Math.max(helper.longestOptionTermLength(command, helper), helper.longestArgumentTermLength(command, helper)),
        ),
      formatItem,
    });
}
