/**
 * Anthropic's rate-limit response headers (https://docs.anthropic.com/en/api/rate-limits#response-headers):
 * `anthropic-ratelimit-requests-limit`, `-requests-remaining`, `-requests-reset` (RFC 3339), and
 * the same three for `tokens`. Only the limits a key has are sent.
 */
import type { RateLimitState } from '@iop/core';

/** Sets the `anthropic-ratelimit-*` headers of `state` through `set`. */
export function anthropicRateLimitHeaders(
  state: RateLimitState,
  _nowMs: number,
  set: (name: string, value: string) => void,
): void {
  for (const kind of ['requests', 'tokens'] as const) {
    const limit = state[kind];
    if (limit === undefined) continue;
    set(`anthropic-ratelimit-${kind}-limit`, String(limit.limit));
    set(`anthropic-ratelimit-${kind}-remaining`, String(Math.max(0, limit.remaining)));
    set(`anthropic-ratelimit-${kind}-reset`, new Date(limit.resetAtMs).toISOString().replace(/\.\d{3}Z$/, 'Z'));
  }
}
