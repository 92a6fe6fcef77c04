/**
 * Google's Gemini API (https://ai.google.dev/api; docs/protocols.md "Gemini") as the edge sees it:
 * `generateContent`, `streamGenerateContent` (`?alt=sse`: SSE; without it a JSON array),
 * `countTokens`, `models.list` and `models.get`, under `v1beta` (the SDK's default), `v1` and
 * `v1alpha` (Gemini CLI passes `GOOGLE_GENAI_API_VERSION` through). The key comes in
 * `x-goog-api-key` (the SDK, Gemini CLI), `?key=` (Google's curl samples) or `Authorization: Bearer`.
 * `GET /v1/models` is OpenAI's list unless the request carries Google's headers or `?key=`.
 */
import type { Dialect, DialectEndpoint } from '@iop/core';
import { openaiRateLimitHeaders } from '../openai-chat/rate-limits.js';
import { geminiErrorResponse } from './errors.js';
import { geminiModelInfo, geminiModelList } from './model-list.js';
import { decodeCountTokensRequest, decodeGenerateContentRequest } from './request-decode.js';
import { encodeGeminiResponse } from './response-encode.js';
import { createGeminiStreamEncoder } from './stream-encode.js';

const VERSIONS = ['v1beta', 'v1', 'v1alpha'] as const;

function endpointsOf(version: string): DialectEndpoint[] {
  const models = `/${version}/models`;
  return [
    { method: 'POST', path: `${models}/{model}:generateContent`, role: 'inference', operation: 'generateContent' },
    {
      method: 'POST',
      path: `${models}/{model}:streamGenerateContent`,
      role: 'inference',
      operation: 'streamGenerateContent',
    },
    { method: 'POST', path: `${models}/{model}:countTokens`, role: 'count-tokens', operation: 'countTokens' },
    { method: 'GET', path: models, role: 'model-list' },
    // `GET /v1/models/{id}` is OpenAI's "retrieve model": Google's `models.get` only under its own versions.
    ...(version === 'v1' ? [] : [{ method: 'GET', path: `${models}/{model}`, role: 'model-get' } as const]),
  ];
}

export const gemini: Dialect = {
  name: 'gemini',
  endpoints: VERSIONS.flatMap(endpointsOf),
  pathPrefixes: ['/v1beta/', '/v1alpha/'],
  keyHeaders: ['x-goog-api-key'],
  keyQueryParam: 'key',
  // `GET /v1/models` from a Gemini client (apiVersion "v1"): Google's SDK headers or `?key=`.
  claims: (headers, query) =>
    headers['x-goog-api-key'] !== undefined || headers['x-goog-api-client'] !== undefined || query.has('key'),
  decodeRequest: decodeGenerateContentRequest,
  // Google documents no rate-limit response headers (its 429 carries `RetryInfo`); iop sends the
  // `x-ratelimit-*` headers it sends OpenAI clients.
  rateLimitHeaders: openaiRateLimitHeaders,
  modelList: geminiModelList,
  modelInfo: geminiModelInfo,
  countTokens: { decode: decodeCountTokensRequest, encode: (tokens) => ({ totalTokens: tokens }) },
  createStreamEncoder: createGeminiStreamEncoder,
  encodeResponse: encodeGeminiResponse,
  errorResponse: geminiErrorResponse,
};
