/** Usage arithmetic: unknown (undefined) stays distinct from zero. */
import type { Usage } from '@iop/core';

const FIELDS = ['inputTokens', 'outputTokens', 'cachedInputTokens', 'cacheWriteTokens', 'reasoningTokens'] as const;

/** Field-wise sum; a field known in neither operand stays unknown. */
export function addUsage(total: Usage | undefined, next: Usage | undefined): Usage | undefined {
  if (next === undefined) return total;
  if (total === undefined) return { ...next };
  const sum: Usage = {};
  for (const field of FIELDS) {
    const a = total[field];
    const b = next[field];
    if (a !== undefined || b !== undefined) sum[field] = (a ?? 0) + (b ?? 0);
  }
  return sum;
}
