/**
 * Hub usage → Responses `usage` (docs/protocols.md "Responses object", "Usage"). Both details objects are always
 * present (the SDK types them as required numbers); an unknown count is sent as 0.
 */
import type { Usage } from '@iop/core';
import type { ResponseUsage } from './wire-types.js';

export function toResponsesUsage(usage: Usage | undefined): ResponseUsage {
  const inputTokens = usage?.inputTokens ?? 0;
  const outputTokens = usage?.outputTokens ?? 0;
  return {
    input_tokens: inputTokens,
    input_tokens_details: {
      cached_tokens: usage?.cachedInputTokens ?? 0,
      cache_write_tokens: usage?.cacheWriteTokens ?? 0,
    },
    output_tokens: outputTokens,
    output_tokens_details: { reasoning_tokens: usage?.reasoningTokens ?? 0 },
    total_tokens: inputTokens + outputTokens,
  };
}
