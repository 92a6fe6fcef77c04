/**
 * IopError → Google's error envelope `{error:{code, message, status, details?}}`
 * (https://ai.google.dev/gemini-api/docs/troubleshooting, AIP-193; docs/protocols.md "Gemini errors"), with the HTTP
 * status Google gives each `google.rpc.Code`:
 *
 * | HTTP | status             | codes                                                                           |
 * | ---- | ------------------ | ------------------------------------------------------------------------------- |
 * | 400  | INVALID_ARGUMENT   | invalid_request, unsupported_field, context_length_exceeded,                    |
 * |      |                    | unprocessable_entity, request_too_large                                         |
 * | 401  | UNAUTHENTICATED    | authentication (`ErrorInfo.reason` `API_KEY_INVALID`)                           |
 * | 403  | PERMISSION_DENIED  | permission                                                                      |
 * | 404  | NOT_FOUND          | not_found, model_not_found                                                      |
 * | 405  | UNIMPLEMENTED      | method_not_allowed (no Google code has 405; the response keeps `Allow`)         |
 * | 409  | ABORTED            | conflict                                                                        |
 * | 429  | RESOURCE_EXHAUSTED | rate_limited, overloaded (+ `RetryInfo` when a delay is known)                  |
 * | 500  | INTERNAL           | internal, upstream_internal, upstream_error                                     |
 * | 503  | UNAVAILABLE        | no_capacity                                                                     |
 * | 504  | DEADLINE_EXCEEDED  | request_timeout, timeout                                                        |
 *
 * Google answers a too-large request with 400 `INVALID_ARGUMENT`, and has no 502: a backend that failed is `INTERNAL`.
 * Gemini CLI retries 429, 499 and 5xx and reads `RetryInfo.retryDelay`, so a 429 carries it and avoids the phrases the
 * CLI takes as terminal quota errors.
 */
import type { ErrorCode, ErrorEvent, ErrorResponse, IopError } from '@iop/core';
import type { GoogleErrorBody, GoogleStatus } from './wire-types.js';

const STATUS: Record<ErrorCode, [number, GoogleStatus]> = {
  invalid_request: [400, 'INVALID_ARGUMENT'],
  unsupported_field: [400, 'INVALID_ARGUMENT'],
  context_length_exceeded: [400, 'INVALID_ARGUMENT'],
  unprocessable_entity: [400, 'INVALID_ARGUMENT'],
  request_too_large: [400, 'INVALID_ARGUMENT'],
  authentication: [401, 'UNAUTHENTICATED'],
  permission: [403, 'PERMISSION_DENIED'],
  not_found: [404, 'NOT_FOUND'],
  model_not_found: [404, 'NOT_FOUND'],
  method_not_allowed: [405, 'UNIMPLEMENTED'],
  conflict: [409, 'ABORTED'],
  rate_limited: [429, 'RESOURCE_EXHAUSTED'],
  overloaded: [429, 'RESOURCE_EXHAUSTED'],
  internal: [500, 'INTERNAL'],
  upstream_internal: [500, 'INTERNAL'],
  upstream_error: [500, 'INTERNAL'],
  no_capacity: [503, 'UNAVAILABLE'],
  request_timeout: [504, 'DEADLINE_EXCEEDED'],
  timeout: [504, 'DEADLINE_EXCEEDED'],
};

/** HTTP status a Gemini client gets for an error code. */
export function geminiErrorStatus(code: ErrorCode): number {
  return STATUS[code][0];
}

/** Google's `error.status` name for an error code. */
export function googleStatus(code: ErrorCode): GoogleStatus {
  return STATUS[code][1];
}

/** The envelope of an error (before the first byte, or in a stream). */
export function googleErrorBody(error: Pick<ErrorEvent, 'code' | 'message' | 'retryAfterSeconds'>): GoogleErrorBody {
  const [code, status] = STATUS[error.code];
  const body: GoogleErrorBody = { error: { code, message: error.message, status } };
  if (error.code === 'authentication') {
    body.error.details = [
      {
        '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
        reason: 'API_KEY_INVALID',
        domain: 'googleapis.com',
        metadata: {},
      },
    ];
  } else if (error.retryAfterSeconds !== undefined) {
    body.error.details = [
      {
        '@type': 'type.googleapis.com/google.rpc.RetryInfo',
        retryDelay: `${Math.max(0, Math.ceil(error.retryAfterSeconds))}s`,
      },
    ];
  }
  return body;
}

/** Renders an error before the first byte: Google's status, `retry-after` when known, `x-request-id`. */
export function geminiErrorResponse(error: IopError, requestId: string): ErrorResponse {
  const headers: Record<string, string> = { 'x-request-id': requestId };
  if (error.retryAfterSeconds !== undefined)
    headers['retry-after'] = String(Math.max(0, Math.ceil(error.retryAfterSeconds)));
  const body = googleErrorBody({
    code: error.code,
    message: error.message,
    ...(error.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: error.retryAfterSeconds }),
  });
  return { status: body.error.code, headers, body };
}
