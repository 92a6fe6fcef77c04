/**
 * Knobs: everything that shapes one simulated response (latency, length, content, tool calls,
 * reasoning, usage, faults).
 *
 * Each knob has one kebab-case name and can be set at three levels, later ones winning:
 * 1. the CLI default (`--<name> <value>`, or `startSim({ knobs })`),
 * 2. a model-name suffix (`<model>@<name>=<value>,<flag>`, see model-name.ts),
 * 3. a request header (`x-sim-<name>: <value>`),
 * 4. a fault queued through `POST /_sim/faults` (its extra keys are knobs too).
 */
import { SimInputError } from './sim-error.js';
import { FRAMINGS, type Framing } from './framed-output.js';

/** `lorem`: generated words; `echo`: the text of the last user message. */
export type ContentMode = 'lorem' | 'echo';

/**
 * Where reasoning text goes: `fields` = `delta.reasoning` and `delta.reasoning_content` (vLLM with a reasoning parser,
 * docs/protocols.md "Backend extras"); `think-tags` = `<think>…</think>` inside content (vLLM without a parser);
 * `think-close-only` = reasoning words then only `</think>` inside content (templates that put the opening tag in the
 * prompt, e.g. Qwen3, DeepSeek-R1).
 */
export type ReasoningFormat = 'fields' | 'think-tags' | 'think-close-only';

/** Fault names. `none` disables a fault set at a lower level. */
export const FAULT_NAMES = [
  'none',
  '403',
  '429',
  '500',
  '503',
  'reset',
  'no-response',
  'slow-first-token',
  'stall',
  'cut',
  'malformed',
  'no-done',
  'error-chunk',
  'finish-no-done',
  'context-length',
] as const;
export type FaultName = (typeof FAULT_NAMES)[number];

/** Finish labels the `finish-label` knob can force. */
export const FINISH_LABELS = ['stop', 'length', 'tool_calls'] as const;
export type FinishLabel = (typeof FINISH_LABELS)[number];

export interface Knobs {
  /** Time to first token (ms): from the request to the first chunk (stream) or part of the wait (non-stream). */
  ttftMs: number;
  /** Inter-token latency (ms) between chunks. */
  itlMs: number;
  /** Content tokens to generate (lorem mode); capped by `max_completion_tokens`/`max_tokens`. */
  outputTokens: number;
  content: ContentMode;
  /** Parallel tool calls to emit when the request declares tools; `undefined` = decide from `tool_choice`. */
  toolCalls: number | undefined;
  /**
   * Plan tool calls as if `tool_choice` were `auto` (Ollama and several vLLM tool parsers ignore it): `tool-calls`
   * alone decides.
   */
  ignoreToolChoice: boolean;
  /**
   * The finish label sent instead of the planned one (e.g. `tool_calls` on a text answer, as some tool parsers do);
   * `undefined` = as planned.
   */
  finishLabel: FinishLabel | undefined;
  /** Share (0..1) of tool calls that get invalid arguments. */
  invalidToolArgs: number;
  /** Seed of the PRNG (lorem words, argument values, invalid-argument and fault-rate draws). */
  seed: number;
  /** Reasoning tokens emitted before the answer. */
  reasoning: number;
  reasoningFormat: ReasoningFormat;
  /** Emit tool calls as Hermes/Qwen `<tool_call>{json}</tool_call>` text inside content. */
  xmlToolCalls: boolean;
  /** Degenerate output: one n-gram repeated until the token limit (finish_reason `length`). */
  repeat: boolean;
  /** Usage on every stream chunk (vLLM `continuous_usage_stats`). */
  continuousUsage: boolean;
  /**
   * SSE framing on the wire: `lf`, `crlf`, `split` (events cut across TCP reads), `crlf-split`, `multiline` (data over
   * several lines).
   */
  framing: Framing;
  /** Usage chunk in every stream even without `stream_options.include_usage` (vLLM `--enable-force-include-usage`). */
  forceUsage: boolean;
  /**
   * Prompt tokens reported as served from the prefix cache (`usage.prompt_tokens_details.cached_tokens`, vLLM
   * `--enable-prompt-tokens-details`), at most the prompt's; 0 omits the field.
   */
  cachedTokens: number;
  fault: FaultName;
  /** Tokens emitted before a mid-stream fault; `undefined` = half of the planned tokens. */
  faultAfter: number | undefined;
  /** Share (0..1) of requests the fault applies to (seeded draw). */
  faultRate: number;
  /** `Retry-After` seconds on 429/500/503 faults; 0 omits the header. */
  retryAfter: number;
  /** Time to first token (ms) under the `slow-first-token` fault. */
  slowTtftMs: number;
  /** Context window (tokens): prompt + max tokens above it is a 400, as in vLLM. */
  maxModelLen: number;
}

export const DEFAULT_KNOBS: Readonly<Knobs> = Object.freeze({
  ttftMs: 0,
  itlMs: 0,
  outputTokens: 16,
  content: 'lorem',
  toolCalls: undefined,
  ignoreToolChoice: false,
  finishLabel: undefined,
  invalidToolArgs: 0,
  seed: 0,
  reasoning: 0,
  reasoningFormat: 'fields',
  xmlToolCalls: false,
  repeat: false,
  continuousUsage: false,
  framing: 'lf',
  forceUsage: false,
  cachedTokens: 0,
  fault: 'none',
  faultAfter: undefined,
  faultRate: 1,
  retryAfter: 1,
  slowTtftMs: 30_000,
  maxModelLen: 8192,
});

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
