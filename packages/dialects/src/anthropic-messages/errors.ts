/**
 * IopError → Anthropic error envelope (docs/protocols.md "Messages errors", "Errors across dialects").
 *
 * | code                                             | status | error.type              |
 * |--------------------------------------------------|--------|-------------------------|
 * | invalid_request, unsupported_field, context_length_exceeded | 400 | invalid_request_error |
 * | authentication                                   | 401    | authentication_error    |
 * | permission                                       | 403    | permission_error        |
 * | not_found, model_not_found                       | 404    | not_found_error         |
 * | method_not_allowed                               | 405    | invalid_request_error   |
 * | request_timeout                                  | 408    | timeout_error           |
 * | conflict, unprocessable_entity                   | 409, 422 | invalid_request_error |
 * | request_too_large                                | 413    | request_too_large       |
 * | rate_limited                                     | 429    | rate_limit_error        |
 * | overloaded (the edge's queue refused)            | 529    | overloaded_error (Anthropic's own status for it) |
 * | internal, upstream_internal                      | 500    | api_error               |
 * | upstream_error                                   | 502    | api_error (the SDK retries ≥ 500) |
 * | no_capacity                                      | 529    | overloaded_error        |
 * | timeout                                          | 504    | timeout_error           |
 *
 * The status is the code's (`statusOf`) except for the two 529s, which this serializer owns.
 * `Retry-After` is set from `retryAfterSeconds`.
 */
import type { ErrorCode, ErrorEvent, ErrorResponse, IopError } from '@iop/core';
import { sseJson, statusOf } from '@iop/core';
import type { AnthropicErrorBody, AnthropicErrorType } from './wire-types.js';

/** Anthropic's status for an overloaded API (docs/protocols.md "Messages errors"). */
export const OVERLOADED_STATUS = 529;

const ERROR_TYPES: Record<ErrorCode, AnthropicErrorType> = {
  invalid_request: 'invalid_request_error',
  unsupported_field: 'invalid_request_error',
  context_length_exceeded: 'invalid_request_error',
  authentication: 'authentication_error',
  permission: 'permission_error',
  not_found: 'not_found_error',
  model_not_found: 'not_found_error',
  method_not_allowed: 'invalid_request_error',
  request_timeout: 'timeout_error',
  conflict: 'invalid_request_error',
  request_too_large: 'request_too_large',
  unprocessable_entity: 'invalid_request_error',
  rate_limited: 'rate_limit_error',
  overloaded: 'overloaded_error',
  internal: 'api_error',
  upstream_internal: 'api_error',
  upstream_error: 'api_error',
  no_capacity: 'overloaded_error',
  timeout: 'timeout_error',
};

/** Anthropic `error.type` of an iop error code. */
export function anthropicErrorType(code: ErrorCode): AnthropicErrorType {
  return ERROR_TYPES[code];
}

/** HTTP status an Anthropic client gets for an error code: the code's, but 529 for `overloaded` and `no_capacity`. */
export function anthropicErrorStatus(code: ErrorCode): number {
  return ERROR_TYPES[code] === 'overloaded_error' ? OVERLOADED_STATUS : statusOf(code);
}

/** Renders an error before the first byte: status, headers (`retry-after`, `request-id`) and body. */
export function errorResponse(error: IopError, requestId: string): ErrorResponse {
  const headers: Record<string, string> = { 'request-id': requestId };
  if (error.retryAfterSeconds !== undefined) headers['retry-after'] = String(Math.ceil(error.retryAfterSeconds));
  const body: AnthropicErrorBody = {
    type: 'error',
    error: { type: anthropicErrorType(error.code), message: error.message },
    request_id: requestId,
  };
  const status = anthropicErrorStatus(error.code);
  // Node knows no reason phrase for 529; clients and proxies show "529 Overloaded".
  return status === OVERLOADED_STATUS
    ? { status, statusMessage: 'Overloaded', headers, body }
    : { status, headers, body };
}

/**
 * The in-stream form (docs/protocols.md "Messages stream"): `event: error` with `{type:"error", error:{type,
 * message}}`.
 */
export function errorEventFrame(event: Pick<ErrorEvent, 'code' | 'message'>): string {
  const body: AnthropicErrorBody = {
    type: 'error',
    error: { type: anthropicErrorType(event.code), message: event.message },
  };
  return sseJson(body, 'error');
}
