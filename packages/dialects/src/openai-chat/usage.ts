/**
 * Chat `usage` ↔ the hub's `Usage` (docs/protocols.md "Chat response", "Usage"). A count the upstream did not send
 * stays `undefined` (unknown), never 0.
 */
import type { Usage } from '@iop/core';
import type { ChatUsage } from './wire-types.js';

function count(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : undefined;
}

/** Reads an upstream `usage` object; returns undefined when it is not an object. */
export function fromChatUsage(value: unknown): Usage | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const usage = value as ChatUsage;
  const result: Usage = {};
  const input = count(usage.prompt_tokens);
  if (input !== undefined) result.inputTokens = input;
  const output = count(usage.completion_tokens);
  if (output !== undefined) result.outputTokens = output;
  const promptDetails = usage.prompt_tokens_details;
  if (typeof promptDetails === 'object' && promptDetails !== null) {
    const cached = count(promptDetails.cached_tokens);
    if (cached !== undefined) result.cachedInputTokens = cached;
    const written = count(promptDetails.cache_write_tokens);
    if (written !== undefined) result.cacheWriteTokens = written;
  }
  const completionDetails = usage.completion_tokens_details;
  if (typeof completionDetails === 'object' && completionDetails !== null) {
    const reasoning = count(completionDetails.reasoning_tokens);
    if (reasoning !== undefined) result.reasoningTokens = reasoning;
  }
  return result;
}

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
