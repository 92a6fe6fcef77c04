/**
 * The hub's `Usage` → Chat `usage` for the client (docs/protocols.md "Chat response", "Usage"). The backend's `usage`
 * is read by `@iop/backend-wire`'s `chatUsageOf`: a count the upstream did not send stays `undefined` (unknown).
 */
import type { Usage } from '@iop/core';
import type { ChatUsage } from './wire-types.js';

/**
 * Renders usage for an OpenAI client. `prompt_tokens`/`completion_tokens` are required by the
 * wire type, so unknown counts render as 0; the details objects appear only when known.
 */
export function toChatUsage(usage: Usage): ChatUsage {
  const prompt = usage.inputTokens ?? 0;
  const completion = usage.outputTokens ?? 0;
  const result: ChatUsage = { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
  if (usage.cachedInputTokens !== undefined || usage.cacheWriteTokens !== undefined) {
    result.prompt_tokens_details = {};
    if (usage.cachedInputTokens !== undefined) result.prompt_tokens_details.cached_tokens = usage.cachedInputTokens;
    if (usage.cacheWriteTokens !== undefined) result.prompt_tokens_details.cache_write_tokens = usage.cacheWriteTokens;
  }
  if (usage.reasoningTokens !== undefined) {
    result.completion_tokens_details = { reasoning_tokens: usage.reasoningTokens };
  }
  return result;
}
