/**
 * Which failed attempts are retried, when, and where. A retry is only possible before the first byte reached the client
 * (docs/decisions/003-provider-pool.md "Failure handling: one commit boundary"); the caller asks `decide()` after each
 * failed attempt and either retries (after `delayMs`, on a provider not yet tried when there is one), re-routes to the
 * group's `contextFallback`, or gives the client the failure.
 *
 * Retryable (another provider may well succeed): connect failure, reset / tunnel lost, rejection for capacity, no
 * response / first-byte timeout, and a status core's `isRetryableStatus` allows (408, 409, 429 honouring `Retry-After`,
 * 5xx except 501 and 505, properties of the backend, not faults). Not retryable: every other 4xx, the client's own
 * fault; a 400 `context_length_exceeded` is not retried on the same model but goes once to the group's
 * `contextFallback` (a longer-context group) when one is configured.
 *
 * Where: another provider when the group has one (the caller passes the tried ones as the picker's `exclude`); when it
 * has none (a single provider, or all others tried), the SAME provider after the backoff, as Envoy's and gRPC's retry
 * policies do: a transient 5xx / 429 / reset is most often gone a moment later. The caller gives up instead when no
 * provider can take the request at all (ejected as an outlier, draining, gone).
 *
 * Delay: full-jitter exponential backoff, `random() × min(maxBackoffMs, baseBackoffMs × 2^(r−1))` for the r-th retry
 * (AWS Architecture Blog, "Exponential Backoff and Jitter", 2015); on the same provider "equal jitter" instead,
 * `ceiling/2 + random() × ceiling/2`, so it is never asked again at once. A call the transport reset before the agent
 * accepted the run (`isResetBeforeAccepted`) is retried at once, without backoff, on another provider or the same one.
 * A 429 or 503 without `Retry-After` retried on the same provider backs off from `overloadBackoffBaseMs` (hundreds of
 * ms) instead of `baseBackoffMs`: a rate-limited or overloaded server is not asked again within tens of milliseconds. A
 * timeout (the run was not accepted, no first byte came, or the body went idle: `idle_timeout`, its own kind) is never
 * retried on the same provider: the client would wait a second full timeout for the same silence. No retry starts when
 * its backoff would end past the request's deadline (`remainingMs`). A `Retry-After` (429, 503…) is a floor, and one
 * longer than `maxBackoffMs` ends the retries (the client gets the status and its `Retry-After`: holding its connection
 * longer helps nobody). Each request has at most `maxAttempts` attempts, and every retry must also pass the pool-wide
 * `RetryBudget`.
 */
import { runErrorInfo, type RunErrorCode, type RunFailureKind } from '@iop/backend';
import { backoffDelayMs, isRetryableStatus } from '@iop/core';
import type { AttemptOutcome } from './outlier-detector.js';
import type { Clock, Random } from './provider.js';
import { RetryBudget } from './retry-budget.js';

export interface RetryConfig {
  /** Attempts per request, the first included (1 = no retry). */
  maxAttempts: number;
  /** Pool-wide retries per client request (see `RetryBudget`). */
  budgetRatio: number;
  /** Pool-wide retries per second allowed whatever the traffic. */
  minRetriesPerSecond: number;
  /** Backoff of the first retry before jitter, ms. */
  baseBackoffMs: number;
  /**
   * Backoff of the first retry of a 429 / 503 without `Retry-After` on the same provider, before jitter, ms (default
   * 500).
   */
  overloadBackoffBaseMs?: number;
  /** Largest backoff, ms; also the longest `Retry-After` waited for. */
  maxBackoffMs: number;
}

/**
 * Why an attempt failed before its first byte: a failed run (`RunFailureKind`, from its ERROR frame's code by
 * `@iop/backend`'s one table, run-errors.ts) or the backend's status.
 */
export type AttemptFailure =
  | { kind: RunFailureKind; detail?: string }
  | {
      kind: 'status';
      /** HTTP status of the backend's answer. */
      status: number;
      /** The `Retry-After` header, verbatim. */
      retryAfter?: string | undefined;
      /** The error body's code (e.g. `context_length_exceeded`), when the caller parsed one. */
      errorCode?: string | undefined;
    };

export type RetryDecision =
  | { action: 'retry'; delayMs: number; reason: string }
  | { action: 'fallback'; group: string; reason: string }
  | {
      action: 'fail';
      reason: string;
      retryAfterMs?: number;
      /** Set when the failure was retryable but the pool-wide `RetryBudget` refused the retry. */
      budgetExhausted?: true;
    };

/** The attempts of one request: providers tried (so the next pick prefers another), count, fallback used. */
export class RequestAttempts {
  /** Provider ids already tried; pass as the picker's `exclude`. */
  readonly tried = new Set<string>();
  /** Attempts started. */
  count = 0;
  /** Whether the context fallback was already taken. */
  fallbackUsed = false;

  /** Call when an attempt is sent to `providerId`. */
  record(providerId: string): void {
    this.tried.add(providerId);
    this.count++;
  }
}

/** Maps a run error code (tunnel `ERROR` frame) to an attempt failure (`@iop/backend` run-errors.ts: the one table). */
export function failureOfRunError(code: RunErrorCode): AttemptFailure {
  const { name, failure } = runErrorInfo(code);
  return { kind: failure, detail: name };
}

/**
 * Whether the failure is the transport resetting the run's call before the agent accepted it
 * (`run_call_reset`, tunnel RunRejected): the run never started, the provider is not at fault
 * (an HTTP/2 session refusing a stream under memory pressure), so it is retried at once — on
 * another provider, or the same one — with no backoff.
 */
export function isResetBeforeAccepted(failure: AttemptFailure): boolean {
  return failure.kind === 'reset' && failure.detail === 'run_call_reset';
}

/** Whether the failure is the prompt not fitting the model's context (`context_length_exceeded`). */
export function isContextOverflow(failure: AttemptFailure): boolean {
  return failure.kind === 'status' && failure.status === 400 && failure.errorCode === 'context_length_exceeded';
}

/** Whether a failure may succeed on another attempt: any failure without an answer, else core's `isRetryableStatus`. */
export function isRetryable(failure: AttemptFailure): boolean {
  return failure.kind !== 'status' || isRetryableStatus(failure.status);
}

/** What the failure says about the provider's health, for the outlier detector. */
export function outcomeOf(failure: AttemptFailure): AttemptOutcome {
  switch (failure.kind) {
    case 'connect_failed':
    case 'reset':
      return 'connect_failure';
    case 'timeout':
    case 'idle_timeout':
    case 'no_response':
      return 'timeout';
    case 'rejected':
      return 'client_error';
    case 'status':
      return failure.status >= 500 ? 'server_error' : 'client_error';
  }
}

/**
 * `Retry-After` (RFC 9110 §10.2.3: delay-seconds or an HTTP-date) as ms from `nowMs`; undefined
 * when absent or unreadable; 0 for a date in the past.
 */
export function parseRetryAfterMs(value: string | undefined, nowMs: number): number | undefined {
  if (value === undefined) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? undefined : Math.max(0, date - nowMs);
}

export class RetryPolicy {
  readonly budget: RetryBudget;
  private readonly now: Clock;
  private readonly random: Random;

  /** @throws RangeError when `maxAttempts` < 1 or a backoff is negative. */
  constructor(
    private readonly config: RetryConfig,
    options: { now?: Clock; random?: Random; budget?: RetryBudget } = {},
  ) {
    if (!(config.maxAttempts >= 1) || !(config.baseBackoffMs >= 0) || !(config.maxBackoffMs >= config.baseBackoffMs)) {
      throw new RangeError('retry policy: maxAttempts must be ≥ 1 and 0 ≤ baseBackoffMs ≤ maxBackoffMs');
    }
    this.now = options.now ?? Date.now;
    this.random = options.random ?? Math.random;
    this.budget = options.budget ?? new RetryBudget(config, { now: this.now });
  }

  /** Starts a client request: counts it into the budget and returns its attempt record. */
  begin(): RequestAttempts {
    this.budget.onRequest();
    return new RequestAttempts();
  }

  /**
   * Backoff before the `retry`-th retry (1-based), ms: full jitter in `[0, ceiling)`, or equal
   * jitter in `[ceiling/2, ceiling)` when `sameProvider` (the provider that just failed is asked again).
   */
  backoffMs(retry: number, sameProvider = false, baseMs = this.config.baseBackoffMs): number {
    return backoffDelayMs(retry - 1, {
      baseMs,
      capMs: this.config.maxBackoffMs,
      jitter: sameProvider ? 'equal' : 'full',
      random: this.random,
    });
  }

  /**
   * What to do after `attempts`' latest attempt failed with `failure`. A `fallback` decision marks
   * the fallback used and clears `tried` (the fallback group's providers are new ground).
   * @param options.contextFallback the current group's `contextFallback`, if any.
   * @param options.maxAttempts a lower attempt limit for this request (e.g. 1 when the stream gate
   *   does the retrying and only a context fallback may still happen here).
   * @param options.sameProvider the retry can only go to the provider that just failed (no other
   *   one of the group can take it): equal-jitter backoff, and the reason says so; a timeout is
   *   then not retried.
   * @param options.remainingMs time left before the request's deadline: a retry whose backoff
   *   would not end before it is refused.
   */
  decide(
    attempts: RequestAttempts,
    failure: AttemptFailure,
    options: {
      contextFallback?: string | undefined;
      maxAttempts?: number;
      sameProvider?: boolean;
      remainingMs?: number;
    } = {},
  ): RetryDecision {
    if (isContextOverflow(failure)) {
      if (options.contextFallback === undefined || attempts.fallbackUsed)
        return { action: 'fail', reason: 'the prompt exceeds the context length and no fallback group is left' };
      attempts.fallbackUsed = true;
      attempts.tried.clear();
      return { action: 'fallback', group: options.contextFallback, reason: 'context length exceeded' };
    }
    const what = failure.kind === 'status' ? `status ${failure.status}` : failure.kind;
    if (!isRetryable(failure)) return { action: 'fail', reason: `${what} is not retryable` };
    const retryAfterMs = failure.kind === 'status' ? parseRetryAfterMs(failure.retryAfter, this.now()) : undefined;
    if (retryAfterMs !== undefined && retryAfterMs > this.config.maxBackoffMs) {
      return {
        action: 'fail',
        reason: `${what} asks to wait ${retryAfterMs} ms, longer than the ${this.config.maxBackoffMs} ms backoff limit`,
        retryAfterMs,
      };
    }
    if (attempts.count >= Math.min(this.config.maxAttempts, options.maxAttempts ?? Number.POSITIVE_INFINITY))
      return { action: 'fail', reason: `${what} after ${attempts.count} attempts (the limit)` };
    const sameProvider = options.sameProvider === true;
    if (sameProvider && (failure.kind === 'timeout' || failure.kind === 'idle_timeout'))
      return { action: 'fail', reason: `${failure.detail ?? 'timeout'} is not retried on the same provider` };
    const overloaded =
      failure.kind === 'status' && (failure.status === 429 || failure.status === 503) && retryAfterMs === undefined;
    const baseMs =
      sameProvider && overloaded
        ? Math.max(this.config.baseBackoffMs, this.config.overloadBackoffBaseMs ?? 500)
        : this.config.baseBackoffMs;
    const delayMs = isResetBeforeAccepted(failure)
      ? 0
      : Math.max(retryAfterMs ?? 0, this.backoffMs(attempts.count, sameProvider, baseMs));
    if (options.remainingMs !== undefined && delayMs >= options.remainingMs)
      return { action: 'fail', reason: `${what}; a retry after ${delayMs} ms would pass the request deadline` };
    if (!this.budget.tryRetry())
      return { action: 'fail', reason: `${what}; the pool's retry budget is spent`, budgetExhausted: true };
    return {
      action: 'retry',
      delayMs,
      reason: `${what} on attempt ${attempts.count}${sameProvider ? '; retried on the same provider' : ''}`,
    };
  }
}
