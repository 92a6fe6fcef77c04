/**
 * Per-key limits, checked before a run starts and counted on actual usage after it:
 * - requests per minute: the request is counted at admission (a refused one is taken back);
 * - tokens per minute and the token budget: admission refuses once the window's (the period's)
 *   sum has reached the limit; `finish` adds the request's real input + output tokens;
 * - the money budget (`budget.maxCostUsd`): the same, on the request's cost at the price table
 *   (ledger/pricing.ts), counted in integer nano-dollars (`nanoUsd`: shared counters add integers);
 * - concurrent streams: a slot is held from admission to `finish`, as a lease of `streamLeaseMs`
 *   (default 15 s) that this edge renews every third of it while the request runs; the leases of
 *   an edge that died (crash, OOM kill, lost host) lapse within `streamLeaseMs`, so its streams
 *   stop counting against the key on every other edge.
 * Windows are fixed one-minute windows (UTC minute boundaries), so a key may get up to twice its
 * per-minute limit across one boundary, and tokens are counted after the fact, so concurrent
 * requests admitted together may overshoot by their own size: the stated tolerance. With Redis
 * the counters are shared by every edge; in memory they are per edge.
 *
 * Refusals are `IopError('rate_limited')` (429; Anthropic `rate_limit_error`) with
 * `retryAfterSeconds`; the caller writes `state` as the dialect's rate-limit headers.
 */
import { IopError, newId } from '@iop/core';
import {
  budgetPeriodEnd,
  budgetPeriodStart,
  type ApiKeyRecord,
  type BudgetPeriod,
  type KeyBudget,
} from '../keys/api-key.js';
import { NANO_USD_PER_USD, nanoUsd } from '../ledger/pricing.js';
import type { CounterStore } from './counter-store.js';
import type { RateLimitState } from '@iop/core';

const MINUTE_MS = 60_000;
const TEN_YEARS_MS = 10 * 365 * 24 * 3600 * 1000;
const DEFAULT_STREAM_LEASE_MS = 15_000;

export interface Admission {
  /** The limit state to send as headers. */
  state: RateLimitState;
  /** Counts the request's tokens (input + output) and cost (USD) and releases its stream slot; call once. */
  finish(tokens: number, costUsd?: number): Promise<void>;
}

export class LimitRefusal extends IopError {
  constructor(
    message: string,
    retryAfterSeconds: number,
    readonly state: RateLimitState,
  ) {
    super('rate_limited', message, { retryAfterSeconds });
  }
}

export interface KeyLimiterOptions {
  /** How long a stream slot outlives the last renewal by its edge (renewed every third of it), ms. Default 15 000. */
  streamLeaseMs?: number;
  now?: () => number;
  /** Tokens and cost (USD) a key has used since `sinceMs` (the ledger): seeds an in-memory budget after a restart. */
  usedSince?: (keyId: string, sinceMs: number) => Promise<{ tokens: number; costUsd: number }>;
}

const NO_LIMITS: Admission = { state: {}, finish: async () => {} };

export class KeyLimiter {
  private readonly streamLeaseMs: number;
  private readonly now: () => number;
  private readonly seeded = new Set<string>();
  /** Stream slots this edge holds now: slot key → lease ids (renewed by `renewal`). */
  private readonly held = new Map<string, Set<string>>();
  private readonly renewal: NodeJS.Timeout;

  constructor(
    private readonly counters: CounterStore,
    private readonly options: KeyLimiterOptions = {},
  ) {
    this.streamLeaseMs = options.streamLeaseMs ?? DEFAULT_STREAM_LEASE_MS;
    this.now = options.now ?? Date.now;
    this.renewal = setInterval(() => void this.renew(), this.streamLeaseMs / 3);
    this.renewal.unref();
  }

  /** Stops renewing the stream leases (shutdown): the ones still held lapse within `streamLeaseMs`. */
  close(): void {
    clearInterval(this.renewal);
  }

  /**
   * Extends every stream lease held now (each renewal in one round trip; a failed one is retried at the next period).
   */
  async renew(): Promise<void> {
    if (this.held.size === 0) return;
    const leases = new Map<string, string[]>();
    for (const [key, ids] of this.held) leases.set(key, [...ids]);
    await this.counters.renewSlots(leases, this.streamLeaseMs).catch(() => {});
  }

  private hold(key: string, leaseId: string): void {
    const ids = this.held.get(key);
    if (ids === undefined) this.held.set(key, new Set([leaseId]));
    else ids.add(leaseId);
  }

  private release(key: string, leaseId: string): Promise<void> {
    const ids = this.held.get(key);
    if (ids !== undefined && ids.delete(leaseId) && ids.size === 0) this.held.delete(key);
    return this.counters.releaseSlot(key, leaseId);
  }

  /** @throws LimitRefusal when a limit or the budget is reached; IopError 503 when the counters fail closed. */
  async admit(record: ApiKeyRecord): Promise<Admission> {
    const { limits, budget } = record;
    if (limits === undefined && budget === undefined) return NO_LIMITS;
    const now = this.now();
    const minute = Math.floor(now / MINUTE_MS);
    const resetAtMs = (minute + 1) * MINUTE_MS;
    const retryAfter = Math.max(1, Math.ceil((resetAtMs - now) / 1000));
    const state: RateLimitState = {};
    const requestKey = `rl:req:${record.id}:${minute}`;
    const tokenKey = `rl:tok:${record.id}:${minute}`;
    let countedRequest = false;
    let slot: { key: string; leaseId: string } | undefined;
    const undo = async () => {
      if (countedRequest) await this.counters.add(requestKey, -1, 2 * MINUTE_MS).catch(() => 0);
      if (slot !== undefined) await this.release(slot.key, slot.leaseId);
    };
    try {
      if (budget !== undefined) await this.checkBudget(record, budget, now, state);
      if (limits?.tokensPerMinute !== undefined) {
        const used = await this.counters.get(tokenKey);
        state.tokens = { limit: limits.tokensPerMinute, remaining: limits.tokensPerMinute - used, resetAtMs };
        if (used >= limits.tokensPerMinute)
          throw new LimitRefusal(
            `rate limit reached: key "${record.name}" used ${used} of ${limits.tokensPerMinute} tokens per minute`,
            retryAfter,
            state,
          );
      }
      if (limits?.requestsPerMinute !== undefined) {
        const count = await this.counters.add(requestKey, 1, 2 * MINUTE_MS);
        countedRequest = true;
        state.requests = { limit: limits.requestsPerMinute, remaining: limits.requestsPerMinute - count, resetAtMs };
        if (count > limits.requestsPerMinute) {
          state.requests.remaining = 0;
          throw new LimitRefusal(
            `rate limit reached: key "${record.name}" allows ${limits.requestsPerMinute} requests per minute`,
            retryAfter,
            state,
          );
        }
      }
      if (limits?.maxConcurrentStreams !== undefined) {
        const key = `streams:${record.id}`;
        const leaseId = newId('lease_', 16);
        const result = await this.counters.acquireSlot(key, leaseId, limits.maxConcurrentStreams, this.streamLeaseMs);
        if (!result.acquired)
          throw new LimitRefusal(
            `concurrency limit reached: key "${record.name}" allows ${limits.maxConcurrentStreams} concurrent streams`,
            1,
            state,
          );
        slot = { key, leaseId };
        this.hold(key, leaseId);
      }
    } catch (error) {
      await undo();
      throw error;
    }
    let finished = false;
    return {
      state,
      finish: async (tokens: number, costUsd = 0) => {
        if (finished) return;
        finished = true;
        const work: Array<Promise<unknown>> = [];
        if (slot !== undefined) work.push(this.release(slot.key, slot.leaseId));
        if (tokens > 0 && limits?.tokensPerMinute !== undefined)
          work.push(this.counters.add(tokenKey, tokens, 2 * MINUTE_MS));
        if (tokens > 0 && budget?.maxTokens !== undefined)
          work.push(
            this.counters.add(
              this.budgetKey('tokens', record.id, budget.period, now),
              tokens,
              this.budgetTtl(budget.period, now),
            ),
          );
        const cost = nanoUsd(costUsd);
        if (cost > 0 && budget?.maxCostUsd !== undefined)
          work.push(
            this.counters.add(
              this.budgetKey('cost', record.id, budget.period, now),
              cost,
              this.budgetTtl(budget.period, now),
            ),
          );
        // Counting after the answer must never fail the answer: a store that is down loses these counts.
        await Promise.allSettled(work);
      },
    };
  }

  /** @throws LimitRefusal when the period's tokens or cost have reached the budget. */
  private async checkBudget(
    record: ApiKeyRecord,
    budget: KeyBudget,
    now: number,
    state: RateLimitState,
  ): Promise<void> {
    const period = budget.period === 'total' ? 'total' : `per-${budget.period}`;
    const end = budgetPeriodEnd(budget.period, now);
    const retry = Number.isFinite(end) ? Math.ceil((end - now) / 1000) : 86_400;
    if (budget.maxTokens !== undefined) {
      const used = await this.budgetUsed('tokens', record.id, budget.period, now);
      if (used >= budget.maxTokens)
        throw new LimitRefusal(
          `budget exhausted: key "${record.name}" has used ${used} of its ${budget.maxTokens}-token ${period} budget`,
          retry,
          state,
        );
    }
    if (budget.maxCostUsd !== undefined) {
      const spent = await this.budgetUsed('cost', record.id, budget.period, now);
      if (spent >= nanoUsd(budget.maxCostUsd))
        throw new LimitRefusal(
          `budget exhausted: key "${record.name}" has spent $${usd(spent)} of its $${budget.maxCostUsd} ${period} budget`,
          retry,
          state,
        );
    }
  }

  /** The counter of a budget: `tokens` (input + output) or `cost` (nano-dollars), per key and period. */
  private budgetKey(kind: 'tokens' | 'cost', keyId: string, period: BudgetPeriod, now: number): string {
    // The token counter keeps its name from before money budgets (its sums stay valid across an upgrade).
    return `${kind === 'tokens' ? 'budget' : 'budget-usd'}:${keyId}:${period}:${budgetPeriodStart(period, now)}`;
  }

  private budgetTtl(period: BudgetPeriod, now: number): number {
    const end = budgetPeriodEnd(period, now);
    return Number.isFinite(end) ? end - now + MINUTE_MS : TEN_YEARS_MS;
  }

  private async budgetUsed(kind: 'tokens' | 'cost', keyId: string, period: BudgetPeriod, now: number): Promise<number> {
    const key = this.budgetKey(kind, keyId, period, now);
    if (this.options.usedSince !== undefined && !this.seeded.has(key)) {
      this.seeded.add(key);
      const used = await this.options.usedSince(keyId, budgetPeriodStart(period, now));
      const amount = kind === 'tokens' ? used.tokens : nanoUsd(used.costUsd);
      if (amount > 0) return this.counters.add(key, amount, this.budgetTtl(period, now));
    }
    return this.counters.get(key);
  }
}

/** Nano-dollars as dollars, to the cent when that shows any (`0.01`), else to 6 significant digits. */
function usd(nano: number): string {
  const dollars = nano / NANO_USD_PER_USD;
  return dollars >= 0.01 ? dollars.toFixed(2) : String(Number(dollars.toPrecision(6)));
}
