/**
 * The Anthropic Messages dialect (`POST /v1/messages`, `/v1/messages/count_tokens`, `GET /v1/models`
 * with `anthropic-version`) as the edge sees it, for Claude Code and the `@anthropic-ai/sdk`
 * clients (contract: @iop/core dialect.ts).
 */
import type { Dialect } from '@iop/core';
import { countTokensResponse, decodeCountTokensRequest } from './count-tokens.js';
import { errorResponse } from './errors.js';
import { anthropicModelList } from './model-list.js';
import { anthropicRateLimitHeaders } from './rate-limits.js';
import { decodeMessagesRequest } from './request-decode.js';
import { encodeResponse } from './response-encode.js';
import { createStreamEncoder } from './stream-encode.js';

export const anthropicMessages: Dialect = {
  name: 'anthropic-messages',
  endpoints: [
    { method: 'POST', path: '/v1/messages', role: 'inference' },
    { method: 'POST', path: '/v1/messages/count_tokens', role: 'count-tokens' },
    { method: 'GET', path: '/v1/models', role: 'model-list' },
  ],
  pathPrefixes: ['/v1/messages'],
  keyHeaders: ['x-api-key'],
  // Anthropic's SDKs send `anthropic-version`: `GET /v1/models` then answers in Anthropic's list shape.
  claims: (headers) => headers['anthropic-version'] !== undefined,
  decodeRequest: (body) => decodeMessagesRequest(body),
  rateLimitHeaders: anthropicRateLimitHeaders,
  modelList: anthropicModelList,
  countTokens: { decode: (body) => decodeCountTokensRequest(body), encode: countTokensResponse },
  createStreamEncoder,
  encodeResponse,
  errorResponse,
};
