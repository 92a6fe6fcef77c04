/**
 * A pool-wide retry budget, so a failing pool never turns into a retry storm (Finagle
 * `RetryBudget`; Envoy `retry_budget` with `budget_percent` and `min_retry_concurrency`; Google
 * SRE book, "Handling Overload": a per-client retry ratio of 10 %). Over a sliding window of
 * `windowMs` (default 10 000 ms, kept as 10 buckets so memory is constant) a retry is allowed while
 *
 *   retries + 1 ≤ budgetRatio × requests + minRetriesPerSecond × windowMs / 1000
 *
 * `requests` counts client requests (not attempts): call `onRequest()` once per request and
 * `tryRetry()` before each retry; a refused retry is not counted. Under a 100 % failure rate the
 * pool sends at most (1 + budgetRatio) × the client traffic plus the small fixed reserve.
 */
import type { Clock } from './provider.js';

export interface RetryBudgetConfig {
  /** Retries allowed per client request over the window (e.g. 0.2 = 20 %). */
  budgetRatio: number;
  /** Retries allowed per second whatever the traffic, so a quiet pool can still retry. */
  minRetriesPerSecond: number;
  /** Sliding window, ms (default 10 000, Finagle's TTL). */
  windowMs?: number;
}

export interface RetryBudgetSnapshot {
  requests: number;
  retries: number;
  /** Retries still allowed in the current window. */
  available: number;
}

const BUCKETS = 10;

export class RetryBudget {
  private readonly requests = new Float64Array(BUCKETS);
  private readonly retries = new Float64Array(BUCKETS);
  private readonly bucketMs: number;
  private reserve: number;
  private bucket = Number.MIN_SAFE_INTEGER;
  private readonly now: Clock;

  constructor(
    private config: RetryBudgetConfig,
    options: { now?: Clock } = {},
  ) {
    const windowMs = config.windowMs ?? 10_000;
    if (!(windowMs > 0) || !(config.budgetRatio >= 0) || !(config.minRetriesPerSecond >= 0)) {
      throw new RangeError('retry budget: windowMs must be > 0, budgetRatio and minRetriesPerSecond ≥ 0');
    }
    this.bucketMs = windowMs / BUCKETS;
    this.reserve = (config.minRetriesPerSecond * windowMs) / 1000;
    this.now = options.now ?? Date.now;
  }

  /**
   * Applies a new `budgetRatio` and `minRetriesPerSecond` (config reload), keeping the requests
   * and retries counted in the window and the window length.
   * @throws RangeError when a value is negative.
   */
  configure(config: Pick<RetryBudgetConfig, 'budgetRatio' | 'minRetriesPerSecond'>): void {
    if (!(config.budgetRatio >= 0) || !(config.minRetriesPerSecond >= 0))
      throw new RangeError('retry budget: budgetRatio and minRetriesPerSecond must be ≥ 0');
    const windowMs = this.bucketMs * BUCKETS;
    this.config = { budgetRatio: config.budgetRatio, minRetriesPerSecond: config.minRetriesPerSecond, windowMs };
    this.reserve = (config.minRetriesPerSecond * windowMs) / 1000;
  }

  /** Counts one client request (deposits `budgetRatio` of a retry). */
  onRequest(): void {
    this.requests[this.advance()]! += 1;
  }

  /** Withdraws one retry; false (and nothing withdrawn) when the budget is spent. */
  tryRetry(): boolean {
    const slot = this.advance();
    if (this.available() < 1) return false;
    this.retries[slot]! += 1;
    return true;
  }

  snapshot(): RetryBudgetSnapshot {
    this.advance();
    return {
      requests: sum(this.requests),
      retries: sum(this.retries),
      available: Math.max(0, Math.floor(this.available())),
    };
  }

  private available(): number {
    return this.config.budgetRatio * sum(this.requests) + this.reserve - sum(this.retries);
  }

  /** Moves the window to now, clearing buckets that fell out; returns the current bucket's slot. */
  private advance(): number {
    const current = Math.floor(this.now() / this.bucketMs);
    if (current > this.bucket) {
      if (current - this.bucket >= BUCKETS) {
        this.requests.fill(0);
        this.retries.fill(0);
      } else {
        for (let next = this.bucket + 1; next <= current; next++) {
          this.requests[slotOf(next)] = 0;
          this.retries[slotOf(next)] = 0;
        }
      }
      this.bucket = current;
    }
    // A clock that steps back stays in the current bucket.
    return slotOf(this.bucket);
  }
}

const slotOf = (bucket: number): number => ((bucket % BUCKETS) + BUCKETS) % BUCKETS;

function sum(values: Float64Array): number {
  let total = 0;
  for (const value of values) total += value;
  return total;
}
