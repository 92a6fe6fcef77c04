/**
 * Command line of `iop-sim` (commander, set up as every iop command is: `iopCommand`): server
 * flags plus one `--<knob>` flag per knob (knobs.ts), which sets that knob's default for every
 * request; a knob that is a flag also takes `--no-<knob>`.
 */
import { CommanderError, type Command } from 'commander';
import { iopCommand } from '@iop/core';
import { KNOB_SPECS, parseKnob } from './knob-specs.js';
import type { Knobs } from './knobs.js';
import type { SimOptions } from './server.js';
import { GPU_PROFILES } from './gpu-profile.js';

export type CliResult = { help: true } | { version: true } | { help: false; options: SimOptions };

/** The sim's version, given by main.ts (the library has no package.json at hand). */
let version = '0.0.0';

/** Sets the version `--version` prints. */
export function setCliVersion(value: string): void {
  version = value;
}

function program(): Command {
  const command = iopCommand(
    'iop-sim',
    version,
    'iop-sim: an OpenAI-compatible inference-server simulator (vLLM-shaped) with fault injection.',
  )
    .option('--port <n>', 'TCP port (0 = any free port)', '0')
    .option('--host <addr>', 'listen address', '127.0.0.1')
    .option('--models <a,b>', 'served model names', 'sim-model')
    .option('--request-log-size <n>', 'records kept for GET /_sim/requests (default 10000)')
    .option('--max-body-bytes <n>', 'largest request body (default 33554432)')
    .option('--profile <name>', `GPU timing profile: ${Object.keys(GPU_PROFILES).join(', ')} (default none)`)
    .option('--time-scale <x>', 'multiply every simulated delay (0.01 = 100x faster; default 1)')
    .option('--max-num-seqs <n>', "the profile's batch size (vLLM --max-num-seqs)")
    .option('--num-gpu-blocks <n>', "the profile's KV-cache blocks (vLLM --num-gpu-blocks-override)")
    .option(
      '--kv-events-endpoint <zmq>',
      'publish KV-cache events (vLLM format) on this ZMQ PUB endpoint, e.g. tcp://127.0.0.1:5557 (port * = any free port; needs --profile)',
    )
    .option(
      '--kv-events-replay-endpoint <zmq>',
      'ZMQ ROUTER endpoint answering replay requests, e.g. tcp://127.0.0.1:5558',
    )
    .option('--kv-events-topic <text>', 'topic frame of each message (default empty, as vLLM)')
    .option(
      '--kv-events-format <array|map>',
      'msgpack encoding: array-like structs (default) or tagged maps (newer vLLM)',
    )
    .option('--kv-events-buffer-steps <n>', 'batches kept for replay (default 10000)');
  for (const spec of KNOB_SPECS) {
    if (spec.flag) {
      command.option(`--${spec.name}`, `knob: ${spec.describe}`);
      command.option(`--no-${spec.name}`, `knob off: ${spec.name}`);
    } else command.option(`--${spec.name} <value>`, `knob: ${spec.describe} (${spec.values.replace(/\|/g, ' | ')})`);
  }
  return command;
}

const HELP_AFTER = [
  '',
  'Knobs set the default of every request; per request: header x-sim-<name>, or the model',
  'suffix <model>@<name>=<value>,<flag>. When listening, the sim prints one readiness line:',
  '{"event":"ready","port":<n>,"host":"<addr>"}.',
].join('\n');

function integerFlag(name: string, raw: string, min: number): number {
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < min)
    throw new RangeError(`--${name}: expected an integer >= ${min}, got '${raw}'`);
  return value;
}

/** Flags by their kebab-case names, as given on the command line. */
function flagValues(argv: readonly string[]): Record<string, string | boolean | undefined> | 'help' | 'version' {
  const command = program()
    .exitOverride()
    .configureOutput({ writeOut: () => undefined, writeErr: () => undefined, outputError: () => undefined });
  try {
    command.parse([...argv], { from: 'user' });
  } catch (error) {
    if (error instanceof CommanderError && error.code === 'commander.helpDisplayed') return 'help';
    if (error instanceof CommanderError && error.code === 'commander.version') return 'version';
    throw new RangeError(error instanceof CommanderError ? error.message.replace(/^error: /, '') : String(error), {
      cause: error,
    });
  }
  const flags: Record<string, string | boolean | undefined> = {};
  for (const option of command.options) {
    const name = option.long!.replace(/^--(no-)?/, '');
    const source = command.getOptionValueSource(option.attributeName());
    if (source === 'cli') flags[name] = command.getOptionValue(option.attributeName()) as string | boolean;
  }
  return flags;
}

/**
 * Parses argv (without node and script).
 * @throws RangeError on unknown flags or bad values, with the flag named (commander's message for the ones it finds).
 */
export function parseCli(argv: readonly string[]): CliResult {
  const flags = flagValues(argv);
  if (flags === 'help') return { help: true };
  if (flags === 'version') return { version: true };
  const knobs: Partial<Knobs> = {};
  for (const spec of KNOB_SPECS) {
    const value = flags[spec.name];
    if (value !== undefined) Object.assign(knobs, parseKnob(spec.name, String(value)));
  }
  const result: SimOptions = { knobs };
  if (typeof flags.port === 'string') result.port = integerFlag('port', flags.port, 0);
  if (typeof flags.host === 'string') result.host = flags.host;
  if (typeof flags.models === 'string')
    result.models = flags.models
      .split(',')
      .map((model) => model.trim())
      .filter((model) => model.length > 0);
  if (typeof flags['request-log-size'] === 'string')
    result.requestLogSize = integerFlag('request-log-size', flags['request-log-size'], 1);
  if (typeof flags['max-body-bytes'] === 'string')
    result.maxBodyBytes = integerFlag('max-body-bytes', flags['max-body-bytes'], 1);
  if (typeof flags.profile === 'string') result.profile = flags.profile;
  if (typeof flags['time-scale'] === 'string') {
    const scale = Number(flags['time-scale']);
    if (!Number.isFinite(scale) || scale <= 0)
      throw new RangeError(`--time-scale: expected a number > 0, got '${flags['time-scale']}'`);
    result.timeScale = scale;
  }
  const overrides: NonNullable<SimOptions['profileOverrides']> = {};
  if (typeof flags['max-num-seqs'] === 'string')
    overrides.maxNumSeqs = integerFlag('max-num-seqs', flags['max-num-seqs'], 1);
  if (typeof flags['num-gpu-blocks'] === 'string')
    overrides.numGpuBlocks = integerFlag('num-gpu-blocks', flags['num-gpu-blocks'], 1);
  if (Object.keys(overrides).length > 0) {
    if (result.profile === undefined)
      throw new RangeError(
        `--${Object.keys(overrides)[0] === 'maxNumSeqs' ? 'max-num-seqs' : 'num-gpu-blocks'} needs --profile`,
      );
    result.profileOverrides = overrides;
  }
  const kvEvents = kvEventsOptions(flags);
  if (kvEvents !== undefined) {
    if (result.profile === undefined) throw new RangeError('--kv-events-endpoint needs --profile');
    result.kvEvents = kvEvents;
  }
  return { help: false, options: result };
}

function kvEventsOptions(flags: Record<string, string | boolean | undefined>): SimOptions['kvEvents'] {
  const endpoint = flags['kv-events-endpoint'];
  const others = ['kv-events-replay-endpoint', 'kv-events-topic', 'kv-events-format', 'kv-events-buffer-steps'].filter(
    (name) => flags[name] !== undefined,
  );
  if (typeof endpoint !== 'string') {
    if (others.length > 0) throw new RangeError(`--${others[0]} needs --kv-events-endpoint`);
    return undefined;
  }
  const format = flags['kv-events-format'];
  if (format !== undefined && format !== 'array' && format !== 'map')
    throw new RangeError(`--kv-events-format: expected array or map, got '${String(format)}'`);
  return {
    endpoint,
    ...(typeof flags['kv-events-replay-endpoint'] === 'string'
      ? { replayEndpoint: flags['kv-events-replay-endpoint'] }
      : {}),
    ...(typeof flags['kv-events-topic'] === 'string' ? { topic: flags['kv-events-topic'] } : {}),
    ...(format === undefined ? {} : { format }),
    ...(typeof flags['kv-events-buffer-steps'] === 'string'
      ? { bufferSteps: integerFlag('kv-events-buffer-steps', flags['kv-events-buffer-steps'], 1) }
      : {}),
  };
}

/** `iop-sim --help` text. */
export function helpText(): string {
  return program().helpInformation() + HELP_AFTER;
}
