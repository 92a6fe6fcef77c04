/**
 * The OpenAI Chat Completions dialect (`POST /v1/chat/completions`, `GET /v1/models`) as the edge
 * sees it (the `Dialect` contract of @iop/core).
 */
import type { Dialect, ErrorResponse, IopError } from '@iop/core';
import { toOpenAIErrorBody } from './errors.js';
import { openaiModelList } from './model-list.js';
import { openaiRateLimitHeaders } from './rate-limits.js';
import { decodeChatRequest } from './request-decode.js';
import { encodeChatResponse } from './response-encode.js';
import { createChatStreamEncoder } from './stream-encode.js';

/**
 * Renders an error for an OpenAI client: real status, `x-request-id`, `retry-after` when known (docs/protocols.md "Chat
 * errors").
 */
export function chatErrorResponse(error: IopError, requestId: string): ErrorResponse {
  const headers: Record<string, string> = { 'x-request-id': requestId };
  if (error.retryAfterSeconds !== undefined)
    headers['retry-after'] = String(Math.max(0, Math.ceil(error.retryAfterSeconds)));
  return { status: error.status, headers, body: toOpenAIErrorBody(error) };
}

export const openaiChat: Dialect = {
  name: 'openai-chat',
  endpoints: [
    { method: 'POST', path: '/v1/chat/completions', role: 'inference', passthrough: true },
    { method: 'GET', path: '/v1/models', role: 'model-list' },
  ],
  // Every path no other dialect claims (the edge's own included) answers in OpenAI's envelope.
  pathPrefixes: ['/'],
  keyHeaders: [],
  decodeRequest: (body) => decodeChatRequest(body),
  rateLimitHeaders: openaiRateLimitHeaders,
  modelList: openaiModelList,
  createStreamEncoder: (context) => createChatStreamEncoder(context),
  encodeResponse: encodeChatResponse,
  errorResponse: chatErrorResponse,
};
