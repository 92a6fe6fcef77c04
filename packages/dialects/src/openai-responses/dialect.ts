/** The OpenAI Responses dialect (`POST /v1/responses`) as the edge's pipeline sees it (the `Dialect` contract of @iop/core). */
import type { Dialect } from '@iop/core';
import { responsesErrorResponse } from './errors.js';
import { decodeResponsesRequest } from './request-decode.js';
import { encodeResponsesResponse } from './response-encode.js';
import { createResponsesStreamEncoder } from './stream-encode.js';

export const openAIResponses: Dialect = {
  name: 'openai-responses',
  decodeRequest: decodeResponsesRequest,
  createStreamEncoder: createResponsesStreamEncoder,
  encodeResponse: encodeResponsesResponse,
  errorResponse: responsesErrorResponse,
};
