/**
 * Knobs: everything that shapes one simulated response (latency, length, content, tool calls,
 * reasoning, usage, faults).
 *
 * Each knob has one kebab-case name and can be set at three levels, later ones winning:
 * 1. the CLI default (`--<name> <value>`, or `startSim({ knobs })`),
 * 2. a model-name suffix (`<model>@<name>=<value>,<flag>`, see model-name.ts),
 * 3. a request header (`x-sim-<name>: <value>`),
 * 4. a fault queued through `POST /_sim/faults` (its extra keys are knobs too).
 *
 * What each knob's name and value text are, and how they are read, is knob-specs.ts.
 */
import type { Framing } from './framed-output.js';

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
