/**
 * The knobs by name (knobs.ts): each one's kebab-case name (CLI flag, model-name suffix key, `x-sim-<name>` header),
 * its value grammar and its parser, and the readers of a name and value and of request headers.
 */
import { SimInputError } from './sim-error.js';
import { FRAMINGS } from './framed-output.js';
import { type ContentMode, FAULT_NAMES, FINISH_LABELS, type Knobs, type ReasoningFormat } from './knobs.js';

export interface KnobSpec {
  /** kebab-case name: CLI flag, `x-sim-<name>` header, suffix key. */
  name: string;
  /** `true` for flags that may be given without a value (`@repeat`, `--repeat`). */
  flag: boolean;
  /** Value grammar for --help and README. */
  values: string;
  describe: string;
  /** Parses the raw text into knob fields; throws SimInputError naming the knob. */
  parse(raw: string): Partial<Knobs>;
}

function fail(name: string, expected: string, raw: string): never {
  throw new SimInputError(`sim knob '${name}': expected ${expected}, got '${raw}'`);
}

function nonNegativeNumber(name: string, raw: string): number {
  const value = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(value) || value < 0) fail(name, 'a number >= 0', raw);
  return value;
}

function nonNegativeInteger(name: string, raw: string): number {
  const value = nonNegativeNumber(name, raw);
  if (!Number.isSafeInteger(value)) fail(name, 'an integer >= 0', raw);
  return value;
}

function rate(name: string, raw: string): number {
  const value = nonNegativeNumber(name, raw);
  if (value > 1) fail(name, 'a rate between 0 and 1', raw);
  return value;
}

function bool(name: string, raw: string): boolean {
  if (raw === 'true' || raw === '1' || raw === '') return true;
  if (raw === 'false' || raw === '0') return false;
  return fail(name, 'true or false', raw);
}

function oneOf<T extends string>(name: string, allowed: readonly T[], raw: string): T {
  if ((allowed as readonly string[]).includes(raw)) return raw as T;
  return fail(name, `one of ${allowed.join('|')}`, raw);
}

export const KNOB_SPECS: readonly KnobSpec[] = [
  {
    name: 'ttft-ms',
    flag: false,
    values: '<ms>',
    describe: 'time to first token',
    parse: (raw) => ({ ttftMs: nonNegativeNumber('ttft-ms', raw) }),
  },
  {
    name: 'itl-ms',
    flag: false,
    values: '<ms>',
    describe: 'inter-token latency',
    parse: (raw) => ({ itlMs: nonNegativeNumber('itl-ms', raw) }),
  },
  {
    name: 'instant',
    flag: true,
    values: '[true|false]',
    describe: 'no delays (ttft-ms=0, itl-ms=0) in one name, e.g. `<model>@instant` on a paced sim',
    parse: (raw) => (bool('instant', raw) ? { ttftMs: 0, itlMs: 0 } : {}),
  },
  {
    name: 'output-tokens',
    flag: false,
    values: '<n>',
    describe: 'content tokens to generate (lorem), capped by max_tokens',
    parse: (raw) => ({ outputTokens: nonNegativeInteger('output-tokens', raw) }),
  },
  {
    name: 'content',
    flag: false,
    values: 'lorem|echo',
    describe: 'generated words or the last user message',
    parse: (raw) => ({ content: oneOf<ContentMode>('content', ['lorem', 'echo'], raw) }),
  },
  {
    name: 'tool-calls',
    flag: false,
    values: '<n>|auto',
    describe: 'parallel tool calls when the request has tools (auto: 1 if tool_choice is required or named)',
    parse: (raw) => ({ toolCalls: raw === 'auto' ? undefined : nonNegativeInteger('tool-calls', raw) }),
  },
  {
    name: 'ignore-tool-choice',
    flag: true,
    values: '[true|false]',
    describe: 'plan tool calls as if tool_choice were auto (tool-calls alone decides), as backends that ignore it do',
    parse: (raw) => ({ ignoreToolChoice: bool('ignore-tool-choice', raw) }),
  },
  {
    name: 'finish-label',
    flag: false,
    values: `${FINISH_LABELS.join('|')}|planned`,
    describe: 'finish_reason sent instead of the planned one (e.g. tool_calls on a text answer)',
    parse: (raw) => ({ finishLabel: raw === 'planned' ? undefined : oneOf('finish-label', FINISH_LABELS, raw) }),
  },
  {
    name: 'invalid-tool-args',
    flag: false,
    values: '<0..1>',
    describe: 'share of tool calls with invalid arguments (not JSON, wrong type, missing required, undeclared tool)',
    parse: (raw) => ({ invalidToolArgs: rate('invalid-tool-args', raw) }),
  },
  {
    name: 'seed',
    flag: false,
    values: '<int>',
    describe: 'PRNG seed (the request `seed` field wins)',
    parse: (raw) => ({ seed: nonNegativeInteger('seed', raw) }),
  },
  {
    name: 'reasoning',
    flag: false,
    values: '<n>',
    describe: 'reasoning tokens before the answer',
    parse: (raw) => ({ reasoning: nonNegativeInteger('reasoning', raw) }),
  },
  {
    name: 'reasoning-format',
    flag: false,
    values: 'fields|think-tags|think-close-only',
    describe: 'delta.reasoning + delta.reasoning_content, or <think> tags inside content',
    parse: (raw) => ({
      reasoningFormat: oneOf<ReasoningFormat>('reasoning-format', ['fields', 'think-tags', 'think-close-only'], raw),
    }),
  },
  {
    name: 'think-tags',
    flag: true,
    values: '[true|false]',
    describe: 'shorthand for reasoning-format=think-tags',
    parse: (raw) => ({ reasoningFormat: bool('think-tags', raw) ? 'think-tags' : 'fields' }),
  },
  {
    name: 'think-close-only',
    flag: true,
    values: '[true|false]',
    describe: 'shorthand for reasoning-format=think-close-only',
    parse: (raw) => ({ reasoningFormat: bool('think-close-only', raw) ? 'think-close-only' : 'fields' }),
  },
  {
    name: 'xml-tool-calls',
    flag: true,
    values: '[true|false]',
    describe: 'tool calls as <tool_call> text in content',
    parse: (raw) => ({ xmlToolCalls: bool('xml-tool-calls', raw) }),
  },
  {
    name: 'repeat',
    flag: true,
    values: '[true|false]',
    describe: 'repeat one n-gram until the token limit',
    parse: (raw) => ({ repeat: bool('repeat', raw) }),
  },
  {
    name: 'continuous-usage',
    flag: true,
    values: '[true|false]',
    describe: 'usage on every stream chunk',
    parse: (raw) => ({ continuousUsage: bool('continuous-usage', raw) }),
  },
  {
    name: 'framing',
    flag: false,
    values: FRAMINGS.join('|'),
    describe: 'SSE framing: line ends, events split across TCP reads, data over several lines',
    parse: (raw) => ({ framing: oneOf('framing', FRAMINGS, raw) }),
  },
  {
    name: 'force-usage',
    flag: true,
    values: '[true|false]',
    describe: 'usage chunk even without include_usage',
    parse: (raw) => ({ forceUsage: bool('force-usage', raw) }),
  },
  {
    name: 'cached-tokens',
    flag: false,
    values: '<n>',
    describe:
      'prompt tokens reported as cached in usage.prompt_tokens_details.cached_tokens (at most the prompt; 0 omits it)',
    parse: (raw) => ({ cachedTokens: nonNegativeInteger('cached-tokens', raw) }),
  },
  {
    name: 'fault',
    flag: false,
    values: FAULT_NAMES.join('|'),
    describe: 'fault to inject',
    parse: (raw) => ({ fault: oneOf('fault', FAULT_NAMES, raw) }),
  },
  {
    name: 'fault-after',
    flag: false,
    values: '<n>',
    describe: 'tokens before a mid-stream fault (default: half the planned tokens)',
    parse: (raw) => ({ faultAfter: nonNegativeInteger('fault-after', raw) }),
  },
  {
    name: 'fault-rate',
    flag: false,
    values: '<0..1>',
    describe: 'share of requests that get the fault',
    parse: (raw) => ({ faultRate: rate('fault-rate', raw) }),
  },
  {
    name: 'retry-after',
    flag: false,
    values: '<s>',
    describe: 'Retry-After seconds on 429/500/503 (0: no header)',
    parse: (raw) => ({ retryAfter: nonNegativeInteger('retry-after', raw) }),
  },
  {
    name: 'slow-ttft-ms',
    flag: false,
    values: '<ms>',
    describe: 'time to first token under fault=slow-first-token',
    parse: (raw) => ({ slowTtftMs: nonNegativeNumber('slow-ttft-ms', raw) }),
  },
  {
    name: 'max-model-len',
    flag: false,
    values: '<n>',
    describe: 'context window in tokens',
    parse: (raw) => ({ maxModelLen: nonNegativeInteger('max-model-len', raw) }),
  },
];

const SPECS_BY_NAME = new Map(KNOB_SPECS.map((spec) => [spec.name, spec]));

/** The `x-sim-<name>` header of every knob, precomputed for the per-request lookup. */
const HEADER_NAMES: readonly (readonly [string, KnobSpec])[] = KNOB_SPECS.map(
  (spec) => [`x-sim-${spec.name}`, spec] as const,
);

/**
 * Parses one knob. `raw` undefined means the flag form (`@repeat`). Accepts camelCase names too
 * (`faultAfter`) for JSON bodies of the control API.
 * @throws SimInputError for an unknown name or a bad value.
 */
export function parseKnob(name: string, raw: string | undefined): Partial<Knobs> {
  const spec = SPECS_BY_NAME.get(name) ?? SPECS_BY_NAME.get(kebabCase(name));
  if (spec === undefined) throw new SimInputError(`unknown sim knob '${name}'`);
  if (raw === undefined && !spec.flag)
    throw new SimInputError(`sim knob '${name}' needs a value (${spec.name}=${spec.values})`);
  return spec.parse(raw ?? 'true');
}

/** Knob overrides from `x-sim-*` request headers (node lower-cases header names). */
export function knobsFromHeaders(
  headers: Readonly<Record<string, string | string[] | undefined>>,
): Partial<Knobs> | undefined {
  let overrides: Partial<Knobs> | undefined;
  for (const [header, spec] of HEADER_NAMES) {
    const value = headers[header];
    if (value === undefined) continue;
    overrides = Object.assign(overrides ?? {}, spec.parse(Array.isArray(value) ? (value[0] ?? '') : value));
  }
  return overrides;
}

function kebabCase(name: string): string {
  return name.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`);
}
