/**
 * The OpenAI Chat Completions dialect (`POST /v1/chat/completions`) as the edge's one pipeline
 * sees it (the `Dialect` contract of @iop/core).
 */
import type { Dialect, ErrorResponse, IopError } from '@iop/core';
import { toOpenAIErrorBody } from './errors.js';
import { decodeChatRequest } from './request-decode.js';
import { encodeChatResponse } from './response-encode.js';
import { createChatStreamEncoder } from './stream-encode.js';

/** Renders an error for an OpenAI client: real status, `x-request-id`, `retry-after` when known (docs/protocols.md "Chat errors"). */
export function chatErrorResponse(error: IopError, requestId: string): ErrorResponse {
  const headers: Record<string, string> = { 'x-request-id': requestId };
  if (error.retryAfterSeconds !== undefined) headers['retry-after'] = String(Math.max(0, Math.ceil(error.retryAfterSeconds)));
  return { status: error.status, headers, body: toOpenAIErrorBody(error) };
}

export const openAIChat: Dialect = {
  name: 'openai-chat',
  decodeRequest: decodeChatRequest,
  createStreamEncoder: (context) => createChatStreamEncoder(context),
  encodeResponse: encodeChatResponse,
  errorResponse: chatErrorResponse,
};
