/**
 * iop's one error class. Every failure that can reach a client is an `IopError` with a code from
 * `ErrorCode`; its HTTP status is the code's (`statusOf(code)`, one table, below) and nothing else:
 * an error cannot carry a status its code disagrees with. Each dialect has one serializer that
 * renders it (OpenAI `{error:{message,type,param,code}}`, Anthropic `{type:"error",error:{type,message}}`);
 * where a dialect answers a code with another status (Anthropic: `overloaded` and `no_capacity` are
 * 529 `overloaded_error`), that serializer owns the mapping. The `cause` is kept for logs and never
 * sent on the wire.
 *
 * This module imports nothing from the rest of core (`events.ts` depends on it, not the reverse).
 * It is also the entry `@iop/core/errors`: code that needs only the error class (the edge's
 * Responses-store worker thread) imports it there instead of loading all of core (config schemas,
 * logger, tracing) into its isolate.
 */

export const ErrorCodes = [
  'invalid_request', // 400: malformed JSON, a missing or wrongly typed field, a value out of range
  'unsupported_field', // 400: a field that cannot be honoured on this route
  'context_length_exceeded', // 400: the prompt does not fit the model's context
  'authentication', // 401: missing or wrong API key
  'permission', // 403
  'not_found', // 404: unknown route or resource (e.g. a stored response id)
  'model_not_found', // 404: no provider serves the model
  'method_not_allowed', // 405: a known path with another method (the response has `Allow`)
  'request_timeout', // 408: an upstream's own 408 (it gave up waiting for the request)
  'conflict', // 409: an upstream's own 409
  'request_too_large', // 413: body over the size limit
  'unprocessable_entity', // 422: an upstream's validation failure (vLLM, FastAPI)
  'rate_limited', // 429: the upstream or a key's limit says slow down
  'overloaded', // 429: the edge's admission queue refused the request (full, or no slot in time); Anthropic: 529
  'internal', // 500: iop's own fault
  'upstream_internal', // 500: the backend answered 500
  'upstream_error', // 502: the backend failed or answered garbage
  'no_capacity', // 503: every provider for the model is busy or down (Anthropic: 529)
  'timeout', // 504: no first byte or a stall past the limit
] as const;

export type ErrorCode = (typeof ErrorCodes)[number];

const STATUS: Record<ErrorCode, number> = {
  invalid_request: 400,
  unsupported_field: 400,
  context_length_exceeded: 400,
  authentication: 401,
  permission: 403,
  not_found: 404,
  model_not_found: 404,
  method_not_allowed: 405,
  request_timeout: 408,
  conflict: 409,
  request_too_large: 413,
  unprocessable_entity: 422,
  rate_limited: 429,
  overloaded: 429,
  internal: 500,
  upstream_internal: 500,
  upstream_error: 502,
  no_capacity: 503,
  timeout: 504,
};

/** HTTP status of an error code (before any dialect's own mapping). */
export function statusOf(code: ErrorCode): number {
  return STATUS[code];
}

/**
 * Maps an upstream's HTTP status to iop's code. A status with no code of its own maps to the
 * nearest one: another 4xx is `invalid_request` (400), another 5xx `upstream_error` (502), an
 * upstream 529 (Anthropic's "overloaded") `no_capacity`.
 */
export function codeOfStatus(status: number): ErrorCode {
  switch (status) {
    case 400:
      return 'invalid_request';
    case 401:
      return 'authentication';
    case 403:
      return 'permission';
    case 404:
      return 'not_found';
    case 405:
      return 'method_not_allowed';
    case 408:
      return 'request_timeout';
    case 409:
      return 'conflict';
    case 413:
      return 'request_too_large';
    case 422:
      return 'unprocessable_entity';
    case 429:
      return 'rate_limited';
    case 500:
      return 'upstream_internal';
    case 503:
    case 529:
      return 'no_capacity';
    case 504:
      return 'timeout';
    default:
      return status >= 500 ? 'upstream_error' : 'invalid_request';
  }
}

/**
 * Whether a failure with this HTTP status may succeed on another attempt: 408, 409, 429, and 5xx except 501 (Not
 * Implemented) and 505 (HTTP Version Not Supported), which are properties of the backend, not faults (both official
 * SDKs retry 408, 409, 429 and 5xx; docs/protocols.md "Chat errors"). The one retryability rule: the pool's retry
 * policy, the stream gate's recovery and `IopError.retryable` all ask it.
 */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || (status >= 500 && status !== 501 && status !== 505);
}

/** Whether an error with this code may succeed on another attempt (`isRetryableStatus` of its status). */
export function isRetryableCode(code: ErrorCode): boolean {
  return isRetryableStatus(STATUS[code]);
}

export interface IopErrorOptions {
  /** The request field at fault, e.g. `messages[2].content` (OpenAI `param`). */
  param?: string;
  /** Seconds the client should wait before retrying (sent as `Retry-After`). */
  retryAfterSeconds?: number;
  /** The underlying failure, for logs only. */
  cause?: unknown;
}

export class IopError extends Error {
  readonly code: ErrorCode;
  /** HTTP status of the code (`statusOf`); a dialect's serializer may answer with its own (Anthropic 529). */
  readonly status: number;
  readonly param: string | undefined;
  readonly retryAfterSeconds: number | undefined;

  constructor(code: ErrorCode, message: string, options: IopErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'IopError';
    this.code = code;
    this.status = STATUS[code];
    this.param = options.param;
    this.retryAfterSeconds = options.retryAfterSeconds;
  }

  get retryable(): boolean {
    return isRetryableCode(this.code);
  }
}

/** Shorthand for a 400 that names the offending field. */
export function invalidRequest(message: string, param?: string): IopError {
  return new IopError('invalid_request', message, param === undefined ? {} : { param });
}

/** Wraps anything thrown into an IopError; unknown failures become `internal` with a generic message. */
export function toIopError(error: unknown): IopError {
  if (error instanceof IopError) return error;
  return new IopError('internal', 'internal error', { cause: error });
}

/**
 * Client-supplied text quoted in an error message, cut to `maxChars` (default 200) so errors never echo megabytes back.
 */
export function excerpt(text: string, maxChars = 200): string {
  return text.length <= maxChars ? text : `${text.slice(0, maxChars)}… (${text.length} characters)`;
}
