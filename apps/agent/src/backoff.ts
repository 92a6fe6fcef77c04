/**
 * Reconnect delays: @iop/core's `backoffDelayMs` with full jitter, attempt n waiting a uniform
 * random time in [0, min(cap, base * 2^n)] ms.
 * After losing an established connection (e.g. the edge restarted) a further uniform delay in
 * [0, lostConnectionJitterMs) spreads the reconnects of many agents over that window.
 */
import { backoffDelayMs } from '@iop/core';

export interface BackoffOptions {
  /** First ceiling, ms. Default 250. */
  baseMs?: number;
  /** Largest ceiling, ms. Default 10 000. */
  capMs?: number;
  /** Window of the extra random delay after a lost connection, ms. Default 1 000. */
  lostConnectionJitterMs?: number;
  /** Source of uniform numbers in [0, 1); defaults to Math.random (tests pass their own). */
  random?: () => number;
}

export class Backoff {
  private attempt = 0;
  private readonly baseMs: number;
  private readonly capMs: number;
  private readonly random: () => number;
  private readonly lostConnectionJitterMs: number;

  constructor(options: BackoffOptions = {}) {
    this.lostConnectionJitterMs = options.lostConnectionJitterMs ?? 1_000;
    this.baseMs = options.baseMs ?? 250;
    this.capMs = options.capMs ?? 10_000;
    this.random = options.random ?? Math.random;
  }

  /** The delay before the next attempt, ms; each call raises the ceiling until it reaches the cap. */
  next(): number {
    const delayMs = backoffDelayMs(this.attempt, { baseMs: this.baseMs, capMs: this.capMs, random: this.random });
    this.attempt++;
    return delayMs;
  }

  /**
   * The delay before reconnecting after a registered connection was lost, ms: `next()` plus a uniform [0,
   * lostConnectionJitterMs).
   */
  nextAfterLostConnection(): number {
    return Math.floor(this.random() * this.lostConnectionJitterMs) + this.next();
  }

  /** Back to the base ceiling (after a stable connection). */
  reset(): void {
    this.attempt = 0;
  }
}
