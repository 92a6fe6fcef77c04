/**
 * The one place that decides WHERE and WHEN a failed attempt is tried again (passthrough and
 * stream gate alike; the gate only decides WHETHER, from its commit boundary). After a failure
 * before the first byte it asks the pool's `RetryPolicy` (retryable?, attempts left, pool-wide
 * budget, backoff with jitter, `Retry-After` as a floor, a timeout never again on the same
 * provider, nothing past the request deadline), checks that a provider of the group can take a
 * retry at all (not all ejected, draining or gone), waits the backoff, and says where the next
 * attempt goes: the same group (another provider when there is one, the picker's `exclude`), or
 * the group's context fallback. See docs/decisions/004-attempt-lifecycle.md.
 */
import { sleep } from '@iop/core';
import type { Logger } from '../logger.js';
import type { ModelGroup } from '../pool/pool-config.js';
import type { ProviderPool } from '../pool/provider-pool.js';
import { isContextOverflow, isRetryable, type AttemptFailure, type RequestAttempts } from '../pool/retry-policy.js';
import type { RequestDeadline } from './request-deadline.js';

export interface RetryContext {
  pool: ProviderPool;
  group: ModelGroup;
  attempts: RequestAttempts;
  /** Providers to avoid besides the ones tried (faulted on earlier gate attempts). */
  avoid?: ReadonlySet<string> | undefined;
  /** A lower attempt limit for this request than the pool's. */
  maxAttempts?: number | undefined;
  deadline?: RequestDeadline | undefined;
  /** Aborts the backoff (client gone, deadline). */
  signal?: AbortSignal | undefined;
  log: Logger;
  /** Log fields of the failed attempt. */
  fields?: Record<string, unknown>;
}

export type RetryVerdict =
  { action: 'retry' } | { action: 'fallback'; group: ModelGroup } | { action: 'fail'; reason: string };

/**
 * Decides the retry of `failure` and, for a retry, waits its backoff (returns early when `signal`
 * aborts; the caller checks it). Counts `iop_pool_retries_total` by reason and logs the decision.
 */
export async function scheduleRetry(context: RetryContext, failure: AttemptFailure): Promise<RetryVerdict> {
  const { pool, group, attempts, avoid, log } = context;
  const fields = {
    ...context.fields,
    attempt: attempts.count,
    failure: failure.kind === 'status' ? failure.status : (failure.detail ?? failure.kind),
  };
  const retryable = isRetryable(failure) && !isContextOverflow(failure);
  if (retryable && !pool.accepting(group)) {
    log.warn(fields, 'attempt failed; no provider of the group takes a retry (ejected, draining or gone)');
    return { action: 'fail', reason: 'no provider takes a retry' };
  }
  const tried = avoid === undefined || avoid.size === 0 ? attempts.tried : new Set([...attempts.tried, ...avoid]);
  const sameProvider = retryable && !pool.canRoute(group, tried);
  const decision = pool.retry.decide(attempts, failure, {
    contextFallback: group.contextFallback,
    sameProvider,
    ...(context.maxAttempts === undefined ? {} : { maxAttempts: context.maxAttempts }),
    ...(context.deadline === undefined ? {} : { remainingMs: context.deadline.remainingMs() }),
  });
  if (decision.action === 'fail') {
    if (decision.budgetExhausted === true) pool.metrics.retries.inc({ group: group.name, reason: 'budget_exhausted' });
    // A client error the backend found (400 for `max_tokens: -5`) is the client's, not the edge's trouble.
    (failure.kind === 'status' && failure.status < 500 ? log.info : log.warn).call(
      log,
      { ...fields, reason: decision.reason },
      'attempt failed; not retried',
    );
    return { action: 'fail', reason: decision.reason };
  }
  if (decision.action === 'fallback') {
    const fallback = pool.group(decision.group);
    if (fallback === undefined) return { action: 'fail', reason: `fallback group ${decision.group} is gone` };
    pool.metrics.retries.inc({ group: group.name, reason: 'fallback' });
    log.info({ ...fields, fallback: fallback.name, reason: decision.reason }, 'routing to the fallback group');
    return { action: 'fallback', group: fallback };
  }
  pool.metrics.retries.inc({ group: group.name, reason: 'retry' });
  log.warn(
    { ...fields, delayMs: decision.delayMs, reason: decision.reason },
    'attempt failed before its first byte; retrying',
  );
  await sleep(decision.delayMs, context.signal);
  return { action: 'retry' };
}
