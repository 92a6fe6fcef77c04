/**
 * OpenAI's rate-limit response headers (https://platform.openai.com/docs/guides/rate-limits#rate-limits-in-headers):
 * `x-ratelimit-limit-requests`, `x-ratelimit-remaining-requests`, `x-ratelimit-reset-requests`
 * (a duration such as `12s` or `1m30s`), and the same three for `-tokens`. Only the limits a key has are sent.
 */
import type { RateLimitState } from '@iop/core';

/** A reset delay in OpenAI's duration form: `12.5s` under a minute, `1m30s` from one. */
function openaiDuration(ms: number): string {
  const seconds = Math.max(0, ms) / 1000;
  return seconds >= 60 ? `${Math.floor(seconds / 60)}m${Math.ceil(seconds % 60)}s` : `${Math.ceil(seconds * 10) / 10}s`;
}

/** Sets the `x-ratelimit-*` headers of `state` through `set`; `nowMs` is the epoch ms the resets count from. */
export function openaiRateLimitHeaders(
  state: RateLimitState,
  nowMs: number,
  set: (name: string, value: string) => void,
): void {
  for (const kind of ['requests', 'tokens'] as const) {
    const limit = state[kind];
    if (limit === undefined) continue;
    set(`x-ratelimit-limit-${kind}`, String(limit.limit));
    set(`x-ratelimit-remaining-${kind}`, String(Math.max(0, limit.remaining)));
    set(`x-ratelimit-reset-${kind}`, openaiDuration(limit.resetAtMs - nowMs));
  }
}
