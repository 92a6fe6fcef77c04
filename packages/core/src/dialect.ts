/**
 * The contract between the edge and a client dialect (OpenAI Chat, OpenAI Responses, Anthropic
 * Messages, Google Gemini). A dialect says everything the edge needs of its API — its endpoints
 * (paths, methods, path parameters), where its clients send their key, its rate-limit headers, its
 * model-list shape, its error envelope (and the status each iop error code gets) — and the edge
 * never branches on the dialect: it mounts every registered dialect's endpoints and calls these.
 */
import type { IopError } from './errors.js';
import type { StreamEvent } from './events.js';
import type { InferenceRequest } from './request.js';

/**
 * A dialect's own name (`openai-chat`, `anthropic-messages`, `gemini`…): the metrics label and the ledger's `dialect`.
 */
export type DialectName = string;

/**
 * What an endpoint does; the edge serves each role with one handler for every dialect:
 * - `inference`: the inference pipeline (decode, gate, run, encode);
 * - `count-tokens`: the request's prompt tokens without running it (`countTokens` below);
 * - `model-list`: the models a client may send now (`modelList`); `model-get`: one of them (`modelInfo`).
 */
export type EndpointRole = 'inference' | 'count-tokens' | 'model-list' | 'model-get';

export interface DialectEndpoint {
  method: 'GET' | 'POST';
  /**
   * The path, with `{name}` for a path parameter: `/v1/messages`,
   * `/v1beta/models/{model}:generateContent`. A parameter matches one or more characters, slashes
   * included (`Qwen/Qwen3-8B`), up to the literal that follows it (the last one, when the name
   * holds the literal too: `qwen3:8b:generateContent` is model `qwen3:8b`); its value is
   * percent-decoded.
   */
  path: string;
  role: EndpointRole;
  /** The operation's name, for the decoder (`streamGenerateContent`); defaults to the role. */
  operation?: string;
  /**
   * `inference` only: the client's dialect is the backend's (OpenAI Chat), so bytes may be relayed when no gate filter
   * needs the content.
   */
  passthrough?: boolean;
}

/** The HTTP request around a body, as a decoder sees it: where the model or the stream mode may be. */
export interface RequestTarget {
  /** The endpoint the request matched. */
  endpoint: DialectEndpoint;
  /** The path without the query, as sent. */
  path: string;
  /** The values of the endpoint's `{name}` parameters, percent-decoded. */
  params: Readonly<Record<string, string>>;
  query: URLSearchParams;
}

/** One window of a key's rate limit (limits/key-limiter.ts on the edge). */
export interface LimitState {
  limit: number;
  remaining: number;
  /** When the window resets, ms since the epoch. */
  resetAtMs: number;
}

/** A key's request and token windows; only the limits the key has are present. */
export interface RateLimitState {
  requests?: LimitState;
  tokens?: LimitState;
}

/** One model a client may send now, as every dialect's model list is built from. */
export interface ModelListing {
  id: string;
  /** Unix seconds; 0: unknown. */
  created: number;
  /** Largest context length reported for it, tokens; null when unknown. */
  contextLength: number | null;
  /** Providers able to serve it now. */
  providers: number;
  /**
   * The APIs its providers serve it with (proto `ModelInfo.apis`: `chat`, `completions`,
   * `embeddings`, `rerank`), sorted; null when no provider tells.
   */
  apis?: string[] | null;
}

/** A dialect's token counting endpoint (Anthropic `count_tokens`, Gemini `countTokens`). */
export interface TokenCounting {
  /**
   * Decodes the body into the request whose prompt is counted (`stream` false, no output limit needed).
   * @throws IopError 400 naming the offending field.
   */
  decode(body: unknown, target: RequestTarget): InferenceRequest;
  /** The response body for `tokens` prompt tokens. */
  encode(tokens: number): unknown;
}

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
  /**
   * The edge's estimate of the prompt's tokens, for a count the wire needs before the backend's
   * usage (Anthropic `message_start`) when the backend gave none at the start (`promptUsage`).
   */
  estimateInputTokens?: () => number;
}

/**
 * Streaming encoder: normalized events in, the client's SSE bytes out (already framed, as text).
 * One instance per response; it keeps the per-stream state (block indexes, sequence numbers).
 */
export interface StreamEncoder {
  /**
   * The stream's `content-type`; `text/event-stream; charset=utf-8` when absent (Gemini without `alt=sse`: a JSON
   * array).
   */
  readonly contentType?: string;
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
  /** The endpoints the edge mounts for this dialect. */
  readonly endpoints: readonly DialectEndpoint[];
  /**
   * Path prefixes whose failures outside any endpoint (unknown path, missing key, unreadable body)
   * this dialect renders; the longest matching prefix of all dialects wins.
   */
  readonly pathPrefixes: readonly string[];
  /**
   * Headers that carry the client's key as their whole value (`x-api-key`, `x-goog-api-key`).
   * `Authorization: Bearer <key>` is accepted on every dialect's paths; an empty value counts as none.
   */
  readonly keyHeaders: readonly string[];
  /** A query parameter that carries the key on this dialect's paths (Gemini `?key=`). */
  readonly keyQueryParam?: string;
  /**
   * For an endpoint several dialects declare (`GET /v1/models`): whether this request is this
   * dialect's (Anthropic: an `anthropic-version` header). The dialect without `claims` is the default.
   */
  claims?(headers: Readonly<Record<string, string | string[] | undefined>>, query: URLSearchParams): boolean;
  /**
   * Validates a client's JSON body and decodes it into the hub request. `target` carries the path
   * parameters and the query (Gemini puts the model and the stream mode there).
   * @throws IopError (`invalid_request` / `unsupported_field`, 400) naming the offending field.
   */
  decodeRequest(body: unknown, target?: RequestTarget): InferenceRequest;
  /** Sets this dialect's rate-limit response headers for `state` through `set`. */
  rateLimitHeaders(state: RateLimitState, nowMs: number, set: (name: string, value: string) => void): void;
  /**
   * The `model-list` response body; `query` carries paging parameters. @throws IopError 400 for a bad page parameter.
   */
  modelList?(models: readonly ModelListing[], query: URLSearchParams): unknown;
  /** The `model-get` response body, or undefined when `id` is not listed (the edge answers 404). */
  modelInfo?(models: readonly ModelListing[], id: string): unknown;
  /** The `count-tokens` endpoint's codec. */
  readonly countTokens?: TokenCounting;
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
