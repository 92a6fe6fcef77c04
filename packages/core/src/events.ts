/**
 * Normalized stream events: the one internal form of a model's output.
 *
 * Dialect decoders turn upstream bytes (OpenAI Chat chunks from vLLM, SGLang, llama.cpp server,
 * Ollama, the embedded backend) into these events; the stream gate filters and releases them; dialect
 * encoders turn them into the client's wire format (Chat chunks, Responses events, Anthropic
 * events). Nothing between those layers passes SSE strings around.
 *
 * Order guarantees a decoder gives (and the gate preserves):
 * - `response-start` comes first, exactly once.
 * - `text-delta`, `reasoning-delta` and `tool-call-delta` follow in the order the model produced
 *   them. A tool call's first delta carries `id` and `name`; later ones carry only `argumentsDelta`.
 * - `usage` may come at any time after `response-start` (usually after `finish`); the last one wins.
 * - Exactly one terminal event ends the stream: `finish` or `error`. Nothing follows it but `usage`.
 */
import { IopError, type ErrorCode, type IopErrorOptions } from './errors.js';

/**
 * Unified finish reason (see docs/protocols.md "Finish reasons").
 * - `stop`: natural end or a stop sequence matched.
 * - `length`: the output token limit was reached.
 * - `tool_calls`: the model called one or more tools.
 * - `content_filter`: output was withheld by a filter.
 * - `other`: the upstream gave a reason iop does not know; the raw value is kept.
 */
export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter' | 'other';

/**
 * Token usage. A field that is `undefined` is unknown, which is distinct from zero.
 * `inputTokens` is the whole prompt, cached tokens included (OpenAI's `prompt_tokens`);
 * Anthropic's `input_tokens` = inputTokens − cachedInputTokens − cacheWriteTokens (docs/protocols.md "Usage").
 */
/**
 * The finish reason a client is told, from what it was delivered: `tool_calls` only when at least
 * one tool call was delivered, and a natural end (`stop`) after tool calls is `tool_calls`. Backends
 * disagree with themselves here (a `tool_calls` label on a text answer, a `stop` label after calls);
 * an agent that reads `tool_use` / `tool_calls` with no call ends its turn and runs nothing. The one
 * rule, applied by the stream gate to every normalized answer and by the Chat passthrough relay.
 */
export function deliveredFinishReason(reason: FinishReason, toolCallDelivered: boolean): FinishReason {
  if (reason === 'tool_calls' && !toolCallDelivered) return 'stop';
  if (reason === 'stop' && toolCallDelivered) return 'tool_calls';
  return reason;
}

export interface Usage {
  /** Prompt tokens, cached ones included. */
  inputTokens?: number;
  /** Output tokens, reasoning included. */
  outputTokens?: number;
  /** Prompt tokens served from the prefix cache. */
  cachedInputTokens?: number;
  /** Prompt tokens written to a cache (Anthropic `cache_creation_input_tokens`). */
  cacheWriteTokens?: number;
  /** The part of `outputTokens` spent on reasoning. */
  reasoningTokens?: number;
}

export interface ResponseStartEvent {
  type: 'response-start';
  /** Upstream response id (e.g. `chatcmpl-…`); encoders mint their own ids where the dialect needs a prefix. */
  id: string;
  /** The model that answered, as the backend named it. */
  model: string;
  /** Unix seconds. */
  created: number;
  /**
   * The prompt's usage as the backend counted it when the answer started (vLLM and SGLang put
   * usage on every chunk with `stream_options.continuous_usage_stats`, the first included), when
   * it did: what Anthropic's `message_start` reports.
   */
  promptUsage?: Usage;
}

export interface TextDeltaEvent {
  type: 'text-delta';
  text: string;
}

export interface ReasoningDeltaEvent {
  type: 'reasoning-delta';
  text: string;
  /** Opaque signature of the reasoning block, when the upstream gives one (Anthropic `signature_delta`). */
  signature?: string;
}

/**
 * A fragment of a tool call. `index` keeps parallel calls apart (Chat `tool_calls[].index`);
 * the first fragment of a call carries `id` and `name`, later ones only `argumentsDelta`.
 * `argumentsDelta` is a fragment of the JSON-encoded arguments, possibly "" (docs/protocols.md "Chat stream").
 */
export interface ToolCallDeltaEvent {
  type: 'tool-call-delta';
  index: number;
  id?: string;
  name?: string;
  argumentsDelta: string;
}

export interface UsageEvent {
  type: 'usage';
  usage: Usage;
}

/** Normal end of the output. */
export interface FinishEvent {
  type: 'finish';
  reason: FinishReason;
  /** The upstream's own value (`stop`, `length`, `eos`, …), or null when it sent none. */
  raw: string | null;
  /** The stop sequence that matched, when the upstream says (vLLM `stop_reason`). */
  stopSequence?: string;
}

/**
 * Abnormal end: the stream failed. Encoders render it as the dialect's in-band error. Its HTTP
 * status before the first byte is its code's (`statusOf`).
 */
export interface ErrorEvent {
  type: 'error';
  code: ErrorCode;
  message: string;
  /** Seconds the client should wait before retrying (an upstream `Retry-After`), when known. */
  retryAfterSeconds?: number;
  /** The request field at fault (OpenAI `param`), when the error names one (e.g. `model` for `model_not_found`). */
  param?: string;
}

export type StreamEvent =
  | ResponseStartEvent
  | TextDeltaEvent
  | ReasoningDeltaEvent
  | ToolCallDeltaEvent
  | UsageEvent
  | FinishEvent
  | ErrorEvent;

export type StreamEventType = StreamEvent['type'];

/** True for the events that end a stream (`finish`, `error`). */
export function isTerminal(event: StreamEvent): event is FinishEvent | ErrorEvent {
  return event.type === 'finish' || event.type === 'error';
}

/**
 * The in-band `error` event for an IopError (code, message, `Retry-After`, `param`), so an error
 * that travels through a stream keeps everything the client's error body needs.
 */
export function errorEventOf(error: IopError): ErrorEvent {
  const event: ErrorEvent = { type: 'error', code: error.code, message: error.message };
  if (error.retryAfterSeconds !== undefined) event.retryAfterSeconds = error.retryAfterSeconds;
  if (error.param !== undefined) event.param = error.param;
  return event;
}

/** The IopError an `error` event stands for (the inverse of `errorEventOf`). */
export function iopErrorOf(event: ErrorEvent): IopError {
  const options: IopErrorOptions = {};
  if (event.retryAfterSeconds !== undefined) options.retryAfterSeconds = event.retryAfterSeconds;
  if (event.param !== undefined) options.param = event.param;
  return new IopError(event.code, event.message, options);
}
