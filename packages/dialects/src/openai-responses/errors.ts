/**
 * Errors for Responses clients. Before the first byte: the OpenAI envelope `{error:{message,type,param,code}}` with the
 * real status (docs/protocols.md "Chat errors", shared with the Chat dialect). In a stream: `Response.error` `{code,
 * message}` of a `response.failed` event (docs/protocols.md "Responses stream"), whose `code` must be one of the SDK's
 * `ResponseError` codes.
 */
import type { ErrorCode, ErrorResponse, IopError } from '@iop/core';
import { chatErrorResponse } from '../openai-chat/dialect.js';
import type { ResponseErrorCode } from './wire-types.js';

/** Renders an error as an HTTP response for a Responses client (same envelope as Chat). */
export function responsesErrorResponse(error: IopError, requestId: string): ErrorResponse {
  return chatErrorResponse(error, requestId);
}

/**
 * `Response.error.code` for an iop code: `rate_limit_exceeded`, `invalid_prompt` (4xx input faults) or `server_error`.
 */
export function responseErrorCode(code: ErrorCode): ResponseErrorCode {
  switch (code) {
    case 'rate_limited':
    case 'overloaded':
      return 'rate_limit_exceeded';
    case 'invalid_request':
    case 'unsupported_field':
    case 'context_length_exceeded':
    case 'conflict':
    case 'unprocessable_entity':
      return 'invalid_prompt';
    default:
      return 'server_error';
  }
}
