/**
 * The contract between the edge's one pipeline and a client dialect (OpenAI Chat, OpenAI
 * Responses, Anthropic Messages). The edge never branches on the dialect: it calls these.
 */
import type { IopError } from './errors.js';
import type { StreamEvent } from './events.js';
import type { InferenceRequest } from './request.js';

export type DialectName = 'openai-chat' | 'openai-responses' | 'anthropic-messages';

/** What an encoder knows about the response it renders. */
export interface EncodeContext {
  /** iop's request id (`x-request-id`). */
  requestId: string;
  /** The model name to show the client (the name it asked for, or the served model when it asked by alias). */
  model: string;
  /** The decoded request: tool origins, include_usage, stop sequences, response format. */
  request: InferenceRequest;
  /** Unix seconds. */
  createdAt: number;
}

/**
 * Streaming encoder: normalized events in, the client's SSE bytes out (already framed, as text).
 * One instance per response; it keeps the per-stream state (block indexes, sequence numbers).
 */
export interface StreamEncoder {
  /** Encodes one event; returns the SSE text to write now ("" when nothing is due yet). */
  push(event: StreamEvent): string;
  /**
   * Ends the stream after the terminal event (or after an abnormal end with no terminal event,
   * which the encoder must render as an in-band error); returns the trailing text (e.g. `[DONE]`).
   */
  end(): string;
  /**
   * The complete response object after `end()`, for a dialect whose responses are stored (OpenAI
   * Responses: the final `Response`, kept for `previous_response_id`); `undefined` before `end()`
   * and for every other dialect.
   */
  result(): unknown;
  /**
   * Optional, for a dialect whose responses are stored: settles how the stream ends and returns
   * the complete response object without writing the terminal event, so the edge can keep it
   * first. An `error` event pushed after it still ends the stream failed (the object could not be
   * kept); `end()` then returns the terminal event and the trailing text.
   */
  settle?(): unknown;
}

/** A rendered error: HTTP status, headers and JSON body in the client's dialect. */
export interface ErrorResponse {
  status: number;
  /** The reason phrase, when Node knows none for the status (Anthropic's 529: `Overloaded`). */
  statusMessage?: string;
  headers: Record<string, string>;
  body: unknown;
}

export interface Dialect {
  readonly name: DialectName;
  /**
   * Validates a client's JSON body and decodes it into the hub request.
   * @throws IopError (`invalid_request` / `unsupported_field`, 400) naming the offending field.
   */
  decodeRequest(body: unknown): InferenceRequest;
  createStreamEncoder(context: EncodeContext): StreamEncoder;
  /**
   * Builds the non-stream response body from the complete event list.
   * @throws IopError when the events end in an `error` event (the edge renders it as an HTTP error).
   */
  encodeResponse(events: readonly StreamEvent[], context: EncodeContext): unknown;
  /**
   * Renders an error as an HTTP response (status, `Retry-After`, body). Errors after the first
   * byte are not rendered here: the edge pushes an `error` event into the stream encoder.
   */
  errorResponse(error: IopError, requestId: string): ErrorResponse;
}

/**
 * Decodes an upstream response body (bytes as the backend sent them, any split) into normalized
 * events, delivered in order to the callback given at construction. It never throws from `push`:
 * a malformed upstream event becomes an `error` event.
 */
export interface UpstreamDecoder {
  /** Feeds the next slice of the upstream body. */
  push(chunk: Uint8Array): void;
  /**
   * End of the upstream body. Emits what is still pending; if the stream ended without a finish
   * reason, emits an `error` event (`upstream_error`: a cut stream is never a success).
   */
  end(): void;
}
