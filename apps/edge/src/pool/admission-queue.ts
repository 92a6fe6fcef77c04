/**
 * Admission control: a bounded FIFO queue per model group in front of the providers, so a burst
 * beyond the pool's concurrency waits briefly instead of failing, and an overload is refused
 * quickly and explicitly instead of piling up (backpressure; Envoy `max_pending_requests`,
 * Google SRE book "Handling Overload").
 *
 * `acquire(group, queue, tryAcquire, signal)` calls `tryAcquire()` (the caller's "pick a provider
 * and take a slot", returning `undefined` when none is free) right away when nobody is waiting,
 * else queues the request. Each `notify(group)` (call it whenever a slot frees: a run ends, an
 * agent joins or leaves drain) serves waiters from the head while their `tryAcquire` succeeds;
 * FIFO, so a waiter is never overtaken by a later arrival — except by a retry (`retry: true`: a
 * request admitted before, whose attempt failed on its provider), which tries at once and
 * otherwise waits ahead of every first attempt (behind earlier retries), and is not refused for a
 * full queue: a request that already waited its turn does not go to the back of the line because
 * its provider died.
 *
 * Rejections (`QueueRefusal`: `IopError` `overloaded` with `retryAfterSeconds`, which each dialect
 * renders itself: OpenAI 429 `rate_limit_error`, Anthropic 529 `overloaded_error`):
 * - the group already has `maxQueued` waiters (0 = no queueing);
 * - the request waited `maxWaitMs` without a slot.
 * When `signal` aborts (the client went away), the waiter is removed and the promise rejects
 * with the signal's reason. Once `close(reason)` was called (the edge shuts down) every waiter and
 * every later request is refused with `reason`. Memory: at most `maxQueued` waiters per group, O(1) insert, removal
 * and head lookup (an insertion-ordered Set).
 */
import { IopError } from '@iop/core';

export interface QueueConfig {
  /** Waiters allowed per group (0 = refuse at once when no slot is free). */
  maxQueued: number;
  /** Longest wait for a slot, ms. */
  maxWaitMs: number;
}

export interface Timers {
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export interface AdmissionQueueOptions {
  /** Defaults to the global timers. */
  timers?: Timers;
  /** `Retry-After` sent with a 429, seconds (default 1). */
  retryAfterSeconds?: number;
}

/** Why the queue refused a request: it was full, or the request's wait ran out. */
export type QueueRefusalReason = 'full' | 'timeout';

/** The queue refused the request: code `overloaded`, with `Retry-After` and why (for the metrics). */
export class QueueRefusal extends IopError {
  readonly reason: QueueRefusalReason;

  constructor(reason: QueueRefusalReason, message: string, retryAfterSeconds: number) {
    super('overloaded', message, { retryAfterSeconds });
    this.reason = reason;
  }
}

export interface QueueStats {
  /** Waiters per group now (groups with none are left out). */
  queued: Record<string, number>;
  /** Requests refused because a queue was full, since start. */
  rejectedFull: number;
  /** Requests refused because their wait ran out, since start. */
  rejectedTimeout: number;
}

interface Waiter {
  /** Queued ahead of first attempts (see the header). */
  retry: boolean;
  tryAcquire: () => unknown;
  resolve: (value: unknown) => void;
  reject: (reason: unknown) => void;
  timer: unknown;
  signal: AbortSignal | undefined;
  onAbort: (() => void) | undefined;
}

const globalTimers: Timers = {
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

export class AdmissionQueue {
  /** Waiters by group; a group with no waiter has no entry. */
  private readonly groups = new Map<string, Set<Waiter>>();
  private readonly timers: Timers;
  private readonly retryAfterSeconds: number;
  private rejectedFull = 0;
  private rejectedTimeout = 0;
  /** Set by `close`: what every request is refused with from then on. */
  private closedWith: unknown;

  constructor(options: AdmissionQueueOptions = {}) {
    this.timers = options.timers ?? globalTimers;
    this.retryAfterSeconds = options.retryAfterSeconds ?? 1;
  }

  /**
   * Resolves with `tryAcquire()`'s first defined result.
   * @param retry the request's earlier attempt failed on its provider: it goes ahead of first
   *   attempts and is never refused for a full queue (see the header).
   * @throws QueueRefusal (`overloaded`) when the queue is full or `maxWaitMs` passes; the
   *   signal's reason when it aborts; whatever `tryAcquire` throws; the `close` reason once closed.
   */
  acquire<T>(
    group: string,
    queue: QueueConfig,
    tryAcquire: () => T | undefined,
    signal?: AbortSignal,
    retry = false,
  ): Promise<T> {
    if (signal?.aborted === true) return Promise.reject(signal.reason);
    if (this.closedWith !== undefined) return Promise.reject(this.closedWith);
    const waiting = this.groups.get(group);
    if (waiting === undefined || retry) {
      try {
        const acquired = tryAcquire();
        if (acquired !== undefined) return Promise.resolve(acquired);
      } catch (error) {
        return Promise.reject(error);
      }
    }
    if (!retry && (waiting?.size ?? 0) >= queue.maxQueued) {
      this.rejectedFull++;
      // The waiters now: retries may have taken it past `maxQueued`.
      return Promise.reject(this.refusal('full', `the queue of \`${group}\` is full (${waiting?.size ?? 0} waiting)`));
    }
    return new Promise<T>((resolve, reject) => {
      const waiter: Waiter = {
        retry,
        tryAcquire,
        resolve: resolve as (value: unknown) => void,
        reject,
        timer: undefined,
        signal,
        onAbort: undefined,
      };
      waiter.timer = this.timers.setTimeout(() => {
        this.rejectedTimeout++;
        this.remove(group, waiter);
        reject(this.refusal('timeout', `no provider of \`${group}\` was free within ${queue.maxWaitMs} ms`));
      }, queue.maxWaitMs);
      if (signal !== undefined) {
        waiter.onAbort = () => {
          this.remove(group, waiter);
          reject(signal.reason);
        };
        signal.addEventListener('abort', waiter.onAbort, { once: true });
      }
      const set = this.groups.get(group);
      if (set === undefined) this.groups.set(group, new Set([waiter]));
      else if (!retry) set.add(waiter);
      // Behind the retries already waiting, ahead of every first attempt. O(waiters), paid only
      // on the failure path; insertion order is what keeps every other operation O(1).
      else this.groups.set(group, withRetry(set, waiter));
      // A waiter ahead may have become servable without a notify.
      if (waiting !== undefined) this.notify(group);
    });
  }

  /** Serves the group's waiters from the head while slots are free. Call when capacity frees. */
  notify(group: string): void {
    const waiters = this.groups.get(group);
    if (waiters === undefined) return;
    for (const waiter of waiters) {
      let acquired: unknown;
      try {
        acquired = waiter.tryAcquire();
      } catch (error) {
        this.remove(group, waiter);
        waiter.reject(error);
        continue;
      }
      if (acquired === undefined) break;
      this.remove(group, waiter);
      waiter.resolve(acquired);
    }
  }

  /**
   * Answers every waiter of `group` with `reason` (a rejection) at once, e.g. when a config reload
   * removed the group. Returns how many waiters there were.
   */
  rejectAll(group: string, reason: unknown): number {
    const waiters = this.groups.get(group);
    if (waiters === undefined) return 0;
    const count = waiters.size;
    for (const waiter of [...waiters]) {
      this.remove(group, waiter);
      waiter.reject(reason);
    }
    return count;
  }

  /**
   * Refuses every waiter of every group with `reason` now, and every later request (the edge is
   * shutting down: nothing queued would be started before its deadline cuts it). Idempotent.
   */
  close(reason: unknown): void {
    if (this.closedWith !== undefined) return;
    this.closedWith = reason;
    for (const group of [...this.groups.keys()]) this.rejectAll(group, reason);
  }

  /** Waiters in `group` now. */
  size(group: string): number {
    return this.groups.get(group)?.size ?? 0;
  }

  stats(): QueueStats {
    const queued: Record<string, number> = {};
    for (const [group, waiters] of this.groups) queued[group] = waiters.size;
    return { queued, rejectedFull: this.rejectedFull, rejectedTimeout: this.rejectedTimeout };
  }

  private remove(group: string, waiter: Waiter): void {
    const waiters = this.groups.get(group);
    if (waiters === undefined || !waiters.delete(waiter)) return;
    if (waiters.size === 0) this.groups.delete(group);
    this.timers.clearTimeout(waiter.timer);
    if (waiter.onAbort !== undefined) waiter.signal?.removeEventListener('abort', waiter.onAbort);
  }

  private refusal(reason: QueueRefusalReason, message: string): QueueRefusal {
    return new QueueRefusal(reason, message, this.retryAfterSeconds);
  }
}

/** `waiters` with `retry` inserted after the retries already there. */
function withRetry(waiters: Set<Waiter>, retry: Waiter): Set<Waiter> {
  const ordered = new Set<Waiter>();
  for (const waiter of waiters) if (waiter.retry) ordered.add(waiter);
  ordered.add(retry);
  for (const waiter of waiters) if (!waiter.retry) ordered.add(waiter);
  return ordered;
}
