/**
 * The rate-limit headers of each dialect, from one limit state:
 * - OpenAI (https://platform.openai.com/docs/guides/rate-limits#rate-limits-in-headers):
 *   `x-ratelimit-limit-requests`, `x-ratelimit-remaining-requests`, `x-ratelimit-reset-requests`
 *   (a duration such as `12s`), and the same three for `-tokens`.
 * - Anthropic (https://docs.anthropic.com/en/api/rate-limits#response-headers):
 *   `anthropic-ratelimit-requests-limit`, `-requests-remaining`, `-requests-reset` (RFC 3339), and
 *   the same three for `tokens`.
 * Only the limits a key has are sent.
 */
import type { DialectName } from '@iop/core';

export interface LimitState {
  limit: number;
  remaining: number;
  /** When the window resets, ms since the epoch. */
  resetAtMs: number;
}

export interface RateLimitState {
  requests?: LimitState;
  tokens?: LimitState;
}

function openaiDuration(ms: number): string {
  const seconds = Math.max(0, ms) / 1000;
  return seconds >= 60 ? `${Math.floor(seconds / 60)}m${Math.ceil(seconds % 60)}s` : `${Math.ceil(seconds * 10) / 10}s`;
}

/** Sets the headers through `set` for the client's dialect. */
export function writeRateLimitHeaders(state: RateLimitState, dialect: DialectName, nowMs: number, set: (name: string, value: string) => void): void {
  for (const kind of ['requests', 'tokens'] as const) {
    const limit = state[kind];
    if (limit === undefined) continue;
    const remaining = String(Math.max(0, limit.remaining));
    if (dialect === 'anthropic-messages') {
      set(`anthropic-ratelimit-${kind}-limit`, String(limit.limit));
      set(`anthropic-ratelimit-${kind}-remaining`, remaining);
      set(`anthropic-ratelimit-${kind}-reset`, new Date(limit.resetAtMs).toISOString().replace(/\.\d{3}Z$/, 'Z'));
    } else {
      set(`x-ratelimit-limit-${kind}`, String(limit.limit));
      set(`x-ratelimit-remaining-${kind}`, remaining);
      set(`x-ratelimit-reset-${kind}`, openaiDuration(limit.resetAtMs - nowMs));
    }
  }
}
