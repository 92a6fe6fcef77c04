/**
 * What the cache-aware pick (resident-pick.ts) knows of each provider's queue: the prefill work it
 * was sent and has not done yet, as the router estimates it, and how many tokens a character of a
 * prompt is (docs/decisions/007-cache-aware-routing.md "The pick").
 *
 * - `PrefillLedger`: per provider a virtual prefill queue. A run started with `u` uncached prompt
 *   tokens adds `u / rate` to it (`charge`); it drains in real time, as an engine prefills prompts
 *   one after another at its prefill rate (vLLM's scheduler; apps/sim's `GpuScheduler`). So
 *   `backlogMs` is the prefill time ahead of a request sent there now. It needs no report from
 *   the agent: an estimate that was too high drains by itself. Bounded by the providers the router
 *   knows (`forget` when one leaves); an entry whose queue has drained is dropped when read.
 * - `TokenRatio`: tokens per character of prompt text, learned from what agents report (a resident
 *   prefix's cached tokens against the characters its key covers), so the edge, which never
 *   tokenizes, can tell how many tokens a request's uncached tail is. Exponential moving average
 *   over one sample per pick; starts at 0.25 (English text under a BPE tokenizer).
 */
import type { Clock } from './provider.js';

export class PrefillLedger {
  /** Provider id → when its queued prefill work ends, ms of `now`. */
  private readonly busyUntil = new Map<string, number>();

  constructor(private readonly now: Clock) {}

  /** Prefill time ahead of a request sent to `providerId` now, ms (0 when its queue has drained). */
  backlogMs(providerId: string, now = this.now()): number {
    const until = this.busyUntil.get(providerId);
    if (until === undefined) return 0;
    if (until <= now) {
      this.busyUntil.delete(providerId);
      return 0;
    }
    return until - now;
  }

  /** A run was started on `providerId` with `prefillMs` of prefill work (its uncached tokens over the rate). */
  charge(providerId: string, prefillMs: number, now = this.now()): void {
    if (!(prefillMs > 0) || !Number.isFinite(prefillMs)) return;
    const until = this.busyUntil.get(providerId);
    this.busyUntil.set(providerId, (until === undefined || until < now ? now : until) + prefillMs);
  }

  /** `providerId` left the pool. */
  forget(providerId: string): void {
    this.busyUntil.delete(providerId);
  }

  /** Providers with prefill work queued (for tests and the admin view). */
  get size(): number {
    return this.busyUntil.size;
  }
}

/** Smallest prefix (characters) a sample is taken from: short ones are mostly chat-template overhead. */
const MIN_SAMPLE_CHARS = 256;
const MIN_RATIO = 0.05;
const MAX_RATIO = 2;

export class TokenRatio {
  private ratio: number;

  /**
   * @param initial tokens per character before any sample (default 0.25).
   * @param alpha weight of a new sample in the moving average, (0, 1] (default 0.1).
   */
  constructor(
    initial = 0.25,
    private readonly alpha = 0.1,
  ) {
    this.ratio = initial;
  }

  /** Tokens per character now. */
  get value(): number {
    return this.ratio;
  }

  /** Tokens of `chars` characters of prompt text, estimated. */
  tokens(chars: number): number {
    return chars * this.ratio;
  }

  /**
   * A prefix of `chars` characters was reported resident with `tokens` cached tokens. Ignored for a short prefix or a
   * ratio outside [0.05, 2] tokens per character (a report that cannot be a whole prefix's).
   */
  observe(tokens: number, chars: number): void {
    if (chars < MIN_SAMPLE_CHARS || !(tokens > 0)) return;
    const sample = tokens / chars;
    if (sample < MIN_RATIO || sample > MAX_RATIO) return;
    this.ratio += this.alpha * (sample - this.ratio);
  }
}
