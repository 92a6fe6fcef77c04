/**
 * Waiting: `sleep`, and the one exponential backoff with jitter that every retry and reconnect
 * uses ("Exponential Backoff And Jitter", AWS Architecture Blog, 2015).
 */

/**
 * Resolves after `ms`, or early (without throwing) when `signal` aborts; at once for `ms` ≤ 0 or
 * an aborted signal. With `unref` the timer does not keep the process alive.
 */
export function sleep(ms: number, signal?: AbortSignal, options: { unref?: boolean } = {}): Promise<void> {
  if (ms <= 0 || signal?.aborted === true) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    if (options.unref === true) timer.unref();
    signal?.addEventListener('abort', done, { once: true });
  });
}

export interface BackoffDelayOptions {
  /** Ceiling of the first attempt, ms. */
  baseMs: number;
  /** Largest ceiling, ms. */
  capMs: number;
  /**
   * `full`: uniform in `[0, ceiling)`; `equal`: uniform in `[ceiling/2, ceiling)`, never near 0
   * (for asking the same server again). Default `full`.
   */
  jitter?: 'full' | 'equal';
  /** Uniform numbers in [0, 1); default `Math.random` (tests pass their own). */
  random?: () => number;
}

/**
 * The delay before attempt `attempt` (0 for the first retry), whole ms: the ceiling
 * `min(capMs, baseMs × 2^attempt)` with `jitter` applied.
 */
export function backoffDelayMs(attempt: number, options: BackoffDelayOptions): number {
  const ceiling = Math.min(options.capMs, options.baseMs * 2 ** Math.min(Math.max(0, attempt), 30));
  const random = options.random ?? Math.random;
  return options.jitter === 'equal'
    ? Math.floor(ceiling / 2 + (random() * ceiling) / 2)
    : Math.floor(random() * ceiling);
}
