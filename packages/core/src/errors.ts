/**
 * iop's one error class. Every failure that can reach a client is an `IopError` with a code from
 * `ErrorCode`; the HTTP status comes from `statusOf(code)` (one table, below), and each dialect has
 * one serializer that renders it (OpenAI `{error:{message,type,param,code}}`, Anthropic
 * `{type:"error",error:{type,message}}`). The `cause` is kept for logs and never sent on the wire.
 */

import type { ErrorEvent } from './events.js';

export const ErrorCodes = [
  'invalid_request', // 400: malformed JSON, a missing or wrongly typed field, a value out of range
  'unsupported_field', // 400: a field that cannot be honoured on this route
  'context_length_exceeded', // 400: the prompt does not fit the model's context
  'authentication', // 401: missing or wrong API key
  'permission', // 403
  'not_found', // 404: unknown route or resource (e.g. a stored response id)
  'model_not_found', // 404: no provider serves the model
  'method_not_allowed', // 405: a known path with another method (the response has `Allow`)
  'request_too_large', // 413: body over the size limit
  'rate_limited', // 429: the upstream or the queue says slow down
  'internal', // 500
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
  request_too_large: 413,
  rate_limited: 429,
  internal: 500,
  upstream_error: 502,
  no_capacity: 503,
  timeout: 504,
};

/** HTTP status of an error code. */
export function statusOf(code: ErrorCode): number {
  return STATUS[code];
}

/** Maps an HTTP status from an upstream to iop's code. */
export function codeOfStatus(status: number): ErrorCode {
  switch (status) {
    case 400:
    case 422:
      return 'invalid_request';
    case 401:
      return 'authentication';
    case 403:
      return 'permission';
    case 404:
      return 'not_found';
    case 408:
    case 504:
      return 'timeout';
    case 413:
      return 'request_too_large';
    case 429:
      return 'rate_limited';
    case 503:
    case 529:
      return 'no_capacity';
    default:
      return status >= 500 ? 'upstream_error' : 'invalid_request';
  }
}

/** Whether a failed attempt with this HTTP status may be retried (408, 409, 429, 5xx, as the OpenAI and Anthropic SDKs retry; docs/protocols.md "Chat errors"). */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

export interface IopErrorOptions {
  /** The request field at fault, e.g. `messages[2].content` (OpenAI `param`). */
  param?: string;
  /** Seconds the client should wait before retrying (sent as `Retry-After`). */
  retryAfterSeconds?: number;
  /** Overrides the status the code implies (e.g. an upstream 4xx passed through as is). */
  status?: number;
  /** The underlying failure, for logs only. */
  cause?: unknown;
}

export class IopError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly param: string | undefined;
  readonly retryAfterSeconds: number | undefined;

  constructor(code: ErrorCode, message: string, options: IopErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'IopError';
    this.code = code;
    this.status = options.status ?? statusOf(code);
    this.param = options.param;
    this.retryAfterSeconds = options.retryAfterSeconds;
  }

  get retryable(): boolean {
    return isRetryableStatus(this.status);
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
 * The in-band `error` event for an IopError (code, message, status, `Retry-After`, `param`), so an
 * error that travels through a stream keeps everything the client's error body needs.
 */
export function errorEventOf(error: IopError): ErrorEvent {
  const event: ErrorEvent = { type: 'error', code: error.code, message: error.message, status: error.status };
  if (error.retryAfterSeconds !== undefined) event.retryAfterSeconds = error.retryAfterSeconds;
  if (error.param !== undefined) event.param = error.param;
  return event;
}

/** The IopError an `error` event stands for (the inverse of `errorEventOf`). */
export function iopErrorOf(event: ErrorEvent): IopError {
  const options: IopErrorOptions = { status: event.status };
  if (event.retryAfterSeconds !== undefined) options.retryAfterSeconds = event.retryAfterSeconds;
  if (event.param !== undefined) options.param = event.param;
  return new IopError(event.code, event.message, options);
}

/** Client-supplied text quoted in an error message, cut to `maxChars` (default 200) so errors never echo megabytes back. */
export function excerpt(text: string, maxChars = 200): string {
  return text.length <= maxChars ? text : `${text.slice(0, maxChars)}… (${text.length} characters)`;
}
