/**
 * `POST /v1/messages/count_tokens` (docs/protocols.md "Token counting"): decode the body and answer with the count (the
 * text to count and the estimate are `shared/token-estimate.ts`).
 *
 * The edge asks a node for an exact count (a tokenize run over `renderCountTokensText`) when it can, and otherwise
 * answers with `estimateRequestTokens`; either way it says which in the `x-iop-token-count: exact|estimate` response
 * header (docs/protocols.md "Token counting": never pass an estimate off as exact).
 */
import type { InferenceRequest } from '@iop/core';
import { decodeMessagesRequest } from './request-decode.js';
import type { CountTokensResponse } from './wire-types.js';

/** Response header naming how `input_tokens` was obtained. */
export const TOKEN_COUNT_HEADER = 'x-iop-token-count';
export type TokenCountKind = 'exact' | 'estimate';

/**
 * Decodes a count_tokens body `{model, messages, system?, tools?, tool_choice?, thinking?, output_config?}`.
 * @throws IopError 400 naming the offending field, as for `/v1/messages`.
 */
export function decodeCountTokensRequest(body: unknown): InferenceRequest {
  return decodeMessagesRequest(body, { countTokens: true });
}

/** The count_tokens response body. */
export function countTokensResponse(inputTokens: number): CountTokensResponse {
  return { input_tokens: inputTokens };
}
