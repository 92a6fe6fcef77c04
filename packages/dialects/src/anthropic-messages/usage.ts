/**
 * Hub usage → Anthropic usage (docs/protocols.md "Usage").
 *
 * Anthropic's `input_tokens` excludes cached tokens: `input_tokens = inputTokens −
 * cachedInputTokens − cacheWriteTokens`; `cache_read_input_tokens = cachedInputTokens`;
 * `cache_creation_input_tokens = cacheWriteTokens`. Passing the whole prompt count as
 * `input_tokens` would make clients count cached tokens twice.
 */
import type { Usage } from '@iop/core';
import type { AnthropicUsage, MessageDeltaUsage } from './wire-types.js';

/** Prompt tokens not read from or written to a cache; never negative. */
function uncachedInputTokens(usage: Usage): number {
  return Math.max(0, (usage.inputTokens ?? 0) - (usage.cachedInputTokens ?? 0) - (usage.cacheWriteTokens ?? 0));
}

/** Full usage object of a non-stream Message. Unknown counts are 0 (the field is required on the wire). */
export function toAnthropicUsage(usage: Usage | undefined): AnthropicUsage {
  if (usage === undefined) {
    return { input_tokens: 0, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
  }
  return {
    input_tokens: uncachedInputTokens(usage),
    output_tokens: usage.outputTokens ?? 0,
    cache_creation_input_tokens: usage.cacheWriteTokens ?? 0,
    cache_read_input_tokens: usage.cachedInputTokens ?? 0,
  };
}

/**
 * `message_delta.usage`: cumulative totals. Input and cache fields are present only when the upstream reported a prompt
 * count, so the SDK keeps its `message_start` values otherwise (docs/protocols.md "Messages stream").
 */
export function toMessageDeltaUsage(usage: Usage | undefined): MessageDeltaUsage {
  const delta: MessageDeltaUsage = { output_tokens: usage?.outputTokens ?? 0 };
  if (usage?.inputTokens !== undefined) {
    delta.input_tokens = uncachedInputTokens(usage);
    delta.cache_creation_input_tokens = usage.cacheWriteTokens ?? 0;
    delta.cache_read_input_tokens = usage.cachedInputTokens ?? 0;
  }
  return delta;
}

/**
 * The `message_start` usage: the backend's prompt count from its first chunk when it gave one
 * (`promptUsage`), else the edge's estimate, else 0 (docs/protocols.md "Usage"). Output is 0.
 */
export function startUsage(promptUsage?: Usage, estimate?: () => number): AnthropicUsage {
  if (promptUsage?.inputTokens !== undefined) return { ...toAnthropicUsage(promptUsage), output_tokens: 0 };
  return {
    input_tokens: estimate === undefined ? 0 : estimate(),
    output_tokens: 0,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
  };
}
