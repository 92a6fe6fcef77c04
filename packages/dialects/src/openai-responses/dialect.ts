/**
 * The OpenAI Responses dialect (`POST /v1/responses`) as the edge's pipeline sees it (the `Dialect` contract of
 * @iop/core).
 */
import type { Dialect } from '@iop/core';
import { openaiRateLimitHeaders } from '../openai-chat/rate-limits.js';
import { responsesErrorResponse } from './errors.js';
import { decodeResponsesRequest } from './request-decode.js';
import { encodeResponsesResponse } from './response-encode.js';
import { createResponsesStreamEncoder } from './stream-encode.js';

export const openaiResponses: Dialect = {
  name: 'openai-responses',
  // The retrieval endpoints (`GET`/`DELETE /v1/responses/{id}`, `…/input_items`) read the edge's
  // Responses store: the edge mounts them with this dialect's registration.
  endpoints: [{ method: 'POST', path: '/v1/responses', role: 'inference' }],
  pathPrefixes: ['/v1/responses'],
  keyHeaders: [],
  decodeRequest: (body) => decodeResponsesRequest(body),
  rateLimitHeaders: openaiRateLimitHeaders,
  createStreamEncoder: createResponsesStreamEncoder,
  encodeResponse: encodeResponsesResponse,
  errorResponse: responsesErrorResponse,
};
