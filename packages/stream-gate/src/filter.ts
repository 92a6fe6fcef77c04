/**
 * Filter contracts. A filter is either a **transformer** (rewrites events: `<think>` extraction,
 * text tool calls) or a **validator** (judges events: tool-call schema, structured output,
 * degeneration, empty output). For each attempt the gate creates fresh instances, runs the
 * transformers as a chain in configured order, then shows every transformed event to all
 * validators (packages/stream-gate/README.md "Filters").
 */
import type { ErrorCode, InferenceRequest, StreamEvent } from '@iop/core';

/**
 * What the gate should do after a rejection.
 * - `retry-exact`: run the same request again (sampling may differ).
 * - `retry-with-patch`: run it again with `Rejection.patch` appended as a user message.
 * - `fail`: no retry; end with an error event.
 */
export type RecoveryDirective = 'retry-exact' | 'retry-with-patch' | 'fail';

/** A failed verdict: the attempt ends and the gate recovers per `recovery`. */
export interface Rejection {
  verdict: 'reject';
  /** Why, for logs, metrics and the final error message (e.g. `arguments of read_file: /path must be string`). */
  reason: string;
  recovery: RecoveryDirective;
  /** The corrective message for the model (required meaning for `retry-with-patch`). */
  patch?: string;
  /**
   * Whether a continuation (after commit) may recover from this rejection; default true.
   * False when continuing the released prefix cannot help (a degenerate loop).
   */
  continuable?: boolean;
  /** Error code if the gate gives up on this rejection; default `upstream_error` (502). */
  code?: ErrorCode;
}

/**
 * A validator's verdict on the stream so far.
 * - `pass`: everything this validator has seen may be released (it clears its hold).
 * - `hold`: it needs more evidence; events are held from the first event it held since its last
 *   `pass` (this one included).
 * - a `Rejection`: the attempt fails.
 * On a terminal event a validator gives its final word: `hold` there counts as `pass`.
 */
export type Verdict = 'pass' | 'hold' | Rejection;

/** What filters know about the attempt they judge. */
export interface AttemptContext {
  /** The client's request as decoded (never the patched copy): tools, tool_choice, response format, stop. */
  readonly request: InferenceRequest;
  /** 1-based attempt number. */
  readonly attempt: number;
  /**
   * Set when this attempt continues a committed answer: `text` is what the client already has
   * (sent to the backend as an assistant prefill); the attempt's output follows it.
   */
  readonly continuation: { readonly text: string } | undefined;
  /** Reports a non-fatal problem (e.g. a tool schema ajv cannot compile) to the gate's sink. */
  warn(message: string): void;
}

/** Rewrites events. One instance per attempt; not shared across requests. */
export interface EventTransformer {
  /**
   * Takes the next event and appends the events to pass on (zero or more) to `out`. It sees the
   * content events (`text-delta`, `reasoning-delta`, `tool-call-delta`) and `finish`, before which it
   * flushes what it holds; `response-start`, `usage` and `error` bypass the chain.
   * @returns a Rejection to end the attempt (e.g. an unparseable text tool call), else undefined.
   */
  push(event: StreamEvent, out: StreamEvent[]): Rejection | undefined;
  /** UTF-8 bytes it holds now (partial tags, call bodies); counted against `maxHeldBytes`. */
  readonly heldBytes: number;
}

/** Judges events (content events and `finish`, after the transformers). One instance per attempt. */
export interface EventValidator {
  check(event: StreamEvent): Verdict;
  /** UTF-8 bytes it retains beyond the gate's own queue, if any; counted against `maxHeldBytes`. */
  readonly heldBytes?: number;
}

export interface TransformerFilter {
  readonly kind: 'transformer';
  /** Name used in config, metrics and logs (e.g. `reasoning`). */
  readonly name: string;
  create(context: AttemptContext): EventTransformer;
}

export interface ValidatorFilter {
  readonly kind: 'validator';
  readonly name: string;
  create(context: AttemptContext): EventValidator;
}

/** A registered filter: a factory of per-attempt instances. */
export type GateFilter = TransformerFilter | ValidatorFilter;

/** Builds a rejection (shorthand used by the built-in filters). */
export function reject(
  reason: string,
  recovery: RecoveryDirective,
  extra: Omit<Rejection, 'verdict' | 'reason' | 'recovery'> = {},
): Rejection {
  return { verdict: 'reject', reason, recovery, ...extra };
}
