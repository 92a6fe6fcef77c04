/**
 * Hub usage → Gemini `usageMetadata` (docs/protocols.md "Gemini response": usage arithmetic).
 * Gemini counts thoughts apart from the answer: `candidatesTokenCount = outputTokens −
 * reasoningTokens`, `thoughtsTokenCount = reasoningTokens`, and `totalTokenCount = prompt +
 * candidates + thoughts`; `cachedContentTokenCount` is part of `promptTokenCount`. Unknown counts
 * are 0 (the three counts are always sent; Gemini CLI reads `promptTokenCount` for its context
 * accounting), the optional two are sent only when known and non-zero.
 */
import type { Usage } from '@iop/core';
import type { UsageMetadata } from './wire-types.js';

export function toUsageMetadata(usage: Usage | undefined): UsageMetadata {
  const prompt = usage?.inputTokens ?? 0;
  const thoughts = Math.min(usage?.reasoningTokens ?? 0, usage?.outputTokens ?? 0);
  const candidates = Math.max(0, (usage?.outputTokens ?? 0) - thoughts);
  const metadata: UsageMetadata = {
    promptTokenCount: prompt,
    candidatesTokenCount: candidates,
    totalTokenCount: prompt + candidates + thoughts,
  };
  if (thoughts > 0) metadata.thoughtsTokenCount = thoughts;
  if ((usage?.cachedInputTokens ?? 0) > 0) metadata.cachedContentTokenCount = usage!.cachedInputTokens!;
  return metadata;
}
