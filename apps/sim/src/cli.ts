/**
 * Command line of `iop-sim` (node's `util.parseArgs`): server flags plus one `--<knob>` flag per
 * knob (knobs.ts), which sets that knob's default for every request.
 */
import { parseArgs } from 'node:util';
import { KNOB_SPECS, parseKnob, type Knobs } from './knobs.js';
import type { SimOptions } from './server.js';
import { GPU_PROFILES } from './gpu-profile.js';

export type CliResult = { help: true } | { version: true } | { help: false; options: SimOptions };

type OptionConfig = { type: 'string' | 'boolean'; short?: string };

const SERVER_FLAGS: Record<string, OptionConfig> = {
  port: { type: 'string' },
  host: { type: 'string' },
  models: { type: 'string' },
  'request-log-size': { type: 'string' },
  'max-body-bytes': { type: 'string' },
  profile: { type: 'string' },
  'time-scale': { type: 'string' },
  'max-num-seqs': { type: 'string' },
  'num-gpu-blocks': { type: 'string' },
  'kv-events-endpoint': { type: 'string' },
  'kv-events-replay-endpoint': { type: 'string' },
  'kv-events-topic': { type: 'string' },
  'kv-events-format': { type: 'string' },
  'kv-events-buffer-steps': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'V' },
};

function integerFlag(name: string, raw: string, min: number): number {
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < min) throw new RangeError(`--${name}: expected an integer >= ${min}, got '${raw}'`);
  return value;
}

/**
 * Parses argv (without node and script).
 * @throws RangeError / TypeError (from parseArgs) on unknown flags or bad values, with the flag named.
 */
export function parseCli(argv: readonly string[]): CliResult {
  const options: Record<string, OptionConfig> = { ...SERVER_FLAGS };
  for (const spec of KNOB_SPECS) options[spec.name] = { type: spec.flag ? 'boolean' : 'string' };
  const { values } = parseArgs({ args: [...argv], options, strict: true, allowPositionals: false, allowNegative: true } as Parameters<typeof parseArgs>[0] & {
    allowNegative: boolean;
  });
  const flags = values as Record<string, string | boolean | undefined>;
  if (flags.help === true) return { help: true };
  if (flags.version === true) return { version: true };
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
  if (typeof flags['request-log-size'] === 'string') result.requestLogSize = integerFlag('request-log-size', flags['request-log-size'], 1);
  if (typeof flags['max-body-bytes'] === 'string') result.maxBodyBytes = integerFlag('max-body-bytes', flags['max-body-bytes'], 1);
  if (typeof flags.profile === 'string') result.profile = flags.profile;
  if (typeof flags['time-scale'] === 'string') {
    const scale = Number(flags['time-scale']);
    if (!Number.isFinite(scale) || scale <= 0) throw new RangeError(`--time-scale: expected a number > 0, got '${flags['time-scale']}'`);
    result.timeScale = scale;
  }
  const overrides: NonNullable<SimOptions['profileOverrides']> = {};
  if (typeof flags['max-num-seqs'] === 'string') overrides.maxNumSeqs = integerFlag('max-num-seqs', flags['max-num-seqs'], 1);
  if (typeof flags['num-gpu-blocks'] === 'string') overrides.numGpuBlocks = integerFlag('num-gpu-blocks', flags['num-gpu-blocks'], 1);
  if (Object.keys(overrides).length > 0) {
    if (result.profile === undefined)
      throw new RangeError(`--${Object.keys(overrides)[0] === 'maxNumSeqs' ? 'max-num-seqs' : 'num-gpu-blocks'} needs --profile`);
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
  const others = ['kv-events-replay-endpoint', 'kv-events-topic', 'kv-events-format', 'kv-events-buffer-steps'].filter((name) => flags[name] !== undefined);
  if (typeof endpoint !== 'string') {
    if (others.length > 0) throw new RangeError(`--${others[0]} needs --kv-events-endpoint`);
    return undefined;
  }
  const format = flags['kv-events-format'];
  if (format !== undefined && format !== 'array' && format !== 'map')
    throw new RangeError(`--kv-events-format: expected array or map, got '${String(format)}'`);
  return {
    endpoint,
    ...(typeof flags['kv-events-replay-endpoint'] === 'string' ? { replayEndpoint: flags['kv-events-replay-endpoint'] } : {}),
    ...(typeof flags['kv-events-topic'] === 'string' ? { topic: flags['kv-events-topic'] } : {}),
    ...(format === undefined ? {} : { format }),
    ...(typeof flags['kv-events-buffer-steps'] === 'string' ? { bufferSteps: integerFlag('kv-events-buffer-steps', flags['kv-events-buffer-steps'], 1) } : {}),
  };
}

/** `iop-sim --help` text. */
export function helpText(): string {
  const knobLines = KNOB_SPECS.map((spec) => `  --${`${spec.name} ${spec.flag ? '' : spec.values}`.padEnd(44)} ${spec.describe}`);
  return [
    'iop-sim: an OpenAI-compatible inference-server simulator (vLLM-shaped) with fault injection.',
    '',
    'Usage: iop-sim [--port 0] [--host 127.0.0.1] [--models sim-model,other] [knob flags]',
    '',
    'Server:',
    '  --port <n>                                     TCP port (0 = any free port; default 0)',
    '  --host <addr>                                  listen address (default 127.0.0.1)',
    '  --models <a,b>                                 served model names (default sim-model)',
    '  --request-log-size <n>                         records kept for GET /_sim/requests (default 10000)',
    '  --max-body-bytes <n>                           largest request body (default 33554432)',
    `  --profile <name>                               GPU timing profile: ${Object.keys(GPU_PROFILES).join('|')} (default none)`,
    '  --time-scale <x>                               multiply every simulated delay (0.01 = 100x faster; default 1)',
    "  --max-num-seqs <n>                             the profile's batch size (vLLM --max-num-seqs)",
    "  --num-gpu-blocks <n>                           the profile's KV-cache blocks (vLLM --num-gpu-blocks-override)",
    '  --kv-events-endpoint <zmq>                     publish KV-cache events (vLLM format) on this ZMQ PUB endpoint,',
    '                                                 e.g. tcp://127.0.0.1:5557 (port * = any free port; needs --profile)',
    '  --kv-events-replay-endpoint <zmq>              ZMQ ROUTER endpoint answering replay requests (e.g. tcp://127.0.0.1:5558)',
    '  --kv-events-topic <text>                       topic frame of each message (default empty, as vLLM)',
    '  --kv-events-format <array|map>                 msgpack encoding: array-like structs (default) or tagged maps (newer vLLM)',
    '  --kv-events-buffer-steps <n>                   batches kept for replay (default 10000)',
    '  -h, --help                                     this text',
    '  -V, --version                                  the version',
    '',
    'Knobs (defaults for every request; per request: header x-sim-<name>, or model suffix <model>@<name>=<value>,<flag>):',
    ...knobLines,
    '',
    'When listening, prints one readiness line: {"event":"ready","port":<n>,"host":"<addr>"}.',
  ].join('\n');
}
