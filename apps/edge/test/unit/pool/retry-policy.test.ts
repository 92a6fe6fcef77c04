import { RunErrorCode } from '@iop/proto';
import { RetryBudget } from '../../../src/pool/retry-budget.js';
import {
  RetryPolicy,
  failureOfRunError,
  isRetryable,
  outcomeOf,
  parseRetryAfterMs,
  type RetryConfig,
} from '../../../src/pool/retry-policy.js';
import { ManualClock } from './fixtures.js';

const config: RetryConfig = {
  maxAttempts: 3,
  budgetRatio: 0.2,
  minRetriesPerSecond: 5,
  baseBackoffMs: 50,
  maxBackoffMs: 2000,
};

function setup(random = () => 0.5, overrides: Partial<RetryConfig> = {}) {
  const clock = new ManualClock(Date.UTC(2025, 0, 1));
  return { clock, policy: new RetryPolicy({ ...config, ...overrides }, { now: clock.now, random }) };
}

describe('retry classification', () => {
  it('retries connection failures, timeouts, 408, 409, 429 and 5xx (core isRetryableStatus); not other 4xx, 501 or 505', () => {
    for (const kind of ['connect_failed', 'reset', 'rejected', 'timeout', 'no_response'] as const)
      expect(isRetryable({ kind })).toBe(true);
    const statuses = [400, 401, 403, 404, 408, 409, 413, 422, 429, 500, 501, 502, 503, 504, 505, 529];
    expect(statuses.filter((status) => isRetryable({ kind: 'status', status }))).toEqual([
      408, 409, 429, 500, 502, 503, 504, 529,
    ]);
  });

  it('maps failures to outlier outcomes: 5xx and connection trouble count, 4xx and capacity do not', () => {
    expect(outcomeOf({ kind: 'status', status: 503 })).toBe('server_error');
    expect(outcomeOf({ kind: 'status', status: 429 })).toBe('client_error');
    expect(outcomeOf({ kind: 'status', status: 400 })).toBe('client_error');
    expect(outcomeOf({ kind: 'reset' })).toBe('connect_failure');
    expect(outcomeOf({ kind: 'timeout' })).toBe('timeout');
    expect(outcomeOf({ kind: 'rejected' })).toBe('client_error');
    expect(failureOfRunError(RunErrorCode.FIRST_BYTE_TIMEOUT)).toEqual({
      kind: 'timeout',
      detail: 'first_byte_timeout',
    });
    expect(failureOfRunError(RunErrorCode.AGENT_DISCONNECTED)).toEqual({ kind: 'reset', detail: 'agent_disconnected' });
    expect(failureOfRunError(RunErrorCode.AT_CAPACITY).kind).toBe('rejected');
  });

  it('reads Retry-After as seconds or an HTTP-date', () => {
    const now = Date.UTC(2025, 0, 1, 0, 0, 0);
    expect(parseRetryAfterMs('3', now)).toBe(3000);
    expect(parseRetryAfterMs('Wed, 01 Jan 2025 00:00:07 GMT', now)).toBe(7000);
    expect(parseRetryAfterMs('Tue, 31 Dec 2024 23:59:00 GMT', now)).toBe(0);
    expect(parseRetryAfterMs('soon', now)).toBeUndefined();
    expect(parseRetryAfterMs(undefined, now)).toBeUndefined();
  });
});

describe('RetryPolicy.decide', () => {
  it('retries on another provider with full-jitter backoff until maxAttempts', () => {
    const { policy } = setup(() => 0.5);
    const attempts = policy.begin();
    attempts.record('a');
    expect(policy.decide(attempts, { kind: 'status', status: 502 })).toEqual({
      action: 'retry',
      delayMs: 25,
      reason: 'status 502 on attempt 1',
    });
    attempts.record('b');
    expect(policy.decide(attempts, { kind: 'connect_failed' })).toEqual({
      action: 'retry',
      delayMs: 50,
      reason: 'connect_failed on attempt 2',
    });
    attempts.record('c');
    expect(policy.decide(attempts, { kind: 'timeout' })).toEqual({
      action: 'fail',
      reason: 'timeout after 3 attempts (the limit)',
    });
    expect([...attempts.tried]).toEqual(['a', 'b', 'c']);
  });

  it('draws the backoff uniformly in [0, min(max, base × 2^(r−1)))', () => {
    expect(setup(() => 0.999).policy.backoffMs(1)).toBe(49);
    expect(setup(() => 0.999).policy.backoffMs(4)).toBe(399);
    expect(setup(() => 0.999).policy.backoffMs(10)).toBe(1998);
    expect(setup(() => 0).policy.backoffMs(10)).toBe(0);
  });

  it('retries on the same provider when it is the only one, with equal jitter in [ceiling/2, ceiling)', () => {
    const { policy } = setup(() => 0);
    const attempts = policy.begin();
    attempts.record('a');
    expect(policy.decide(attempts, { kind: 'status', status: 500 }, { sameProvider: true })).toEqual({
      action: 'retry',
      delayMs: 25,
      reason: 'status 500 on attempt 1; retried on the same provider',
    });
    attempts.record('a');
    expect(policy.decide(attempts, { kind: 'reset' }, { sameProvider: true })).toEqual({
      action: 'retry',
      delayMs: 50,
      reason: 'reset on attempt 2; retried on the same provider',
    });
    attempts.record('a');
    expect(policy.decide(attempts, { kind: 'status', status: 500 }, { sameProvider: true })).toEqual({
      action: 'fail',
      reason: 'status 500 after 3 attempts (the limit)',
    });
    expect(setup(() => 0.999).policy.backoffMs(1, true)).toBe(49);
    expect(setup(() => 0.999).policy.backoffMs(10, true)).toBe(1999);
    expect(setup(() => 0).policy.backoffMs(10, true)).toBe(1000);
  });

  it('retries a Run call reset before the agent accepted the run at once, on the same provider too; other resets back off', () => {
    const { policy } = setup(() => 0.999);
    const attempts = policy.begin();
    attempts.record('a');
    const reset = failureOfRunError(RunErrorCode.RUN_CALL_RESET);
    expect(reset).toEqual({ kind: 'reset', detail: 'run_call_reset' });
    expect(policy.decide(attempts, reset, { sameProvider: true })).toEqual({
      action: 'retry',
      delayMs: 0,
      reason: 'reset on attempt 1; retried on the same provider',
    });
    expect(policy.decide(attempts, reset)).toMatchObject({ action: 'retry', delayMs: 0 });
    expect(
      policy.decide(attempts, failureOfRunError(RunErrorCode.BACKEND_RESET), { sameProvider: true }),
    ).toMatchObject({
      action: 'retry',
      delayMs: 49,
    });
  });

  it('waits a 503’s Retry-After before asking the same provider again', () => {
    const { policy } = setup(() => 0.5);
    const attempts = policy.begin();
    attempts.record('a');
    expect(
      policy.decide(attempts, { kind: 'status', status: 503, retryAfter: '1' }, { sameProvider: true }),
    ).toMatchObject({ action: 'retry', delayMs: 1000 });
  });

  it('does not retry 4xx, not even on the same provider', () => {
    const { policy } = setup();
    const attempts = policy.begin();
    attempts.record('a');
    expect(policy.decide(attempts, { kind: 'status', status: 401 }, { sameProvider: true })).toEqual({
      action: 'fail',
      reason: 'status 401 is not retryable',
    });
  });

  it('does not retry 4xx', () => {
    const { policy } = setup();
    const attempts = policy.begin();
    attempts.record('a');
    expect(policy.decide(attempts, { kind: 'status', status: 422 })).toEqual({
      action: 'fail',
      reason: 'status 422 is not retryable',
    });
  });

  it('waits at least Retry-After on a 429, and gives up when it exceeds maxBackoffMs', () => {
    const { policy } = setup(() => 0.5);
    const attempts = policy.begin();
    attempts.record('a');
    expect(policy.decide(attempts, { kind: 'status', status: 429, retryAfter: '1' })).toMatchObject({
      action: 'retry',
      delayMs: 1000,
    });
    attempts.record('b');
    expect(policy.decide(attempts, { kind: 'status', status: 429, retryAfter: '30' })).toEqual({
      action: 'fail',
      reason: 'status 429 asks to wait 30000 ms, longer than the 2000 ms backoff limit',
      retryAfterMs: 30_000,
    });
  });

  it('sends a context overflow once to the contextFallback group, never retrying the same model', () => {
    const { policy } = setup();
    const overflow = { kind: 'status', status: 400, errorCode: 'context_length_exceeded' } as const;
    const attempts = policy.begin();
    attempts.record('a');
    expect(policy.decide(attempts, overflow)).toEqual({
      action: 'fail',
      reason: 'the prompt exceeds the context length and no fallback group is left',
    });
    expect(policy.decide(attempts, overflow, { contextFallback: 'qwen3-8b-128k' })).toEqual({
      action: 'fallback',
      group: 'qwen3-8b-128k',
      reason: 'context length exceeded',
    });
    expect(attempts.tried.size).toBe(0);
    attempts.record('b');
    expect(policy.decide(attempts, overflow, { contextFallback: 'qwen3-8b-128k' }).action).toBe('fail');
  });

  it('stops retrying when the pool-wide budget is spent', () => {
    const clock = new ManualClock(0);
    const budget = new RetryBudget({ budgetRatio: 0, minRetriesPerSecond: 0.2, windowMs: 10_000 }, { now: clock.now });
    const policy = new RetryPolicy(config, { now: clock.now, budget, random: () => 0 });
    const decisions = Array.from({ length: 4 }, () => {
      const attempts = policy.begin();
      attempts.record('a');
      return policy.decide(attempts, { kind: 'reset' }).action;
    });
    expect(decisions).toEqual(['retry', 'retry', 'fail', 'fail']);
    const attempts = policy.begin();
    attempts.record('a');
    expect(policy.decide(attempts, { kind: 'reset' })).toEqual({
      action: 'fail',
      reason: "reset; the pool's retry budget is spent",
      budgetExhausted: true,
    });
  });

  it('refuses a config without attempts', () => {
    expect(() => new RetryPolicy({ ...config, maxAttempts: 0 })).toThrow(RangeError);
  });
});

describe('retry timing that never hammers', () => {
  it('a 429 or 503 without Retry-After on the same provider backs off from overloadBackoffBaseMs: 250–500 ms, then 500–1000 ms', () => {
    for (const status of [429, 503]) {
      for (const random of [0, 0.999]) {
        const { policy } = setup(() => random, { overloadBackoffBaseMs: 500 });
        const attempts = policy.begin();
        attempts.record('a');
        const first = policy.decide(attempts, { kind: 'status', status }, { sameProvider: true });
        expect(first.action).toBe('retry');
        const firstMs = (first as { delayMs: number }).delayMs;
        expect(firstMs).toBeGreaterThanOrEqual(250);
        expect(firstMs).toBeLessThan(500);
        attempts.record('a');
        const second = policy.decide(attempts, { kind: 'status', status }, { sameProvider: true });
        expect((second as { delayMs: number }).delayMs).toBeGreaterThanOrEqual(500);
        expect((second as { delayMs: number }).delayMs).toBeLessThan(1000);
      }
    }
  });

  it('a 500 on the same provider keeps the small base; a Retry-After stays the floor', () => {
    const { policy } = setup(() => 0, { overloadBackoffBaseMs: 500 });
    const attempts = policy.begin();
    attempts.record('a');
    expect(policy.decide(attempts, { kind: 'status', status: 500 }, { sameProvider: true })).toMatchObject({
      action: 'retry',
      delayMs: 25,
    });
    expect(
      policy.decide(attempts, { kind: 'status', status: 429, retryAfter: '1' }, { sameProvider: true }),
    ).toMatchObject({ action: 'retry', delayMs: 1000 });
  });

  it('a timeout (not accepted, no first byte) is not retried on the same provider, only on another one', () => {
    const { policy } = setup();
    const attempts = policy.begin();
    attempts.record('a');
    for (const detail of ['first_byte_timeout', 'run_accepted_timeout']) {
      expect(policy.decide(attempts, { kind: 'timeout', detail }, { sameProvider: true })).toEqual({
        action: 'fail',
        reason: `${detail} is not retried on the same provider`,
      });
    }
    expect(
      policy.decide(attempts, { kind: 'timeout', detail: 'first_byte_timeout' }, { sameProvider: false }).action,
    ).toBe('retry');
    expect(failureOfRunError(RunErrorCode.RUN_ACCEPTED_TIMEOUT)).toEqual({
      kind: 'timeout',
      detail: 'run_accepted_timeout',
    });
  });

  it('an idle timeout is its own kind, retried like a timeout: on another provider, never on the same one', () => {
    const { policy } = setup();
    const attempts = policy.begin();
    attempts.record('a');
    const idle = failureOfRunError(RunErrorCode.IDLE_TIMEOUT);
    expect(idle).toEqual({ kind: 'idle_timeout', detail: 'idle_timeout' });
    expect(policy.decide(attempts, idle, { sameProvider: true })).toEqual({
      action: 'fail',
      reason: 'idle_timeout is not retried on the same provider',
    });
    expect(policy.decide(attempts, idle, { sameProvider: false }).action).toBe('retry');
    expect(outcomeOf(idle)).toBe('timeout');
  });

  it('no retry whose backoff would end past the request deadline', () => {
    const { policy } = setup(() => 0.5, { overloadBackoffBaseMs: 500 });
    const attempts = policy.begin();
    attempts.record('a');
    const decision = policy.decide(attempts, { kind: 'status', status: 503 }, { sameProvider: true, remainingMs: 100 });
    expect(decision.action).toBe('fail');
    expect((decision as { reason: string }).reason).toContain('deadline');
    expect(
      policy.decide(attempts, { kind: 'status', status: 503 }, { sameProvider: true, remainingMs: 10_000 }).action,
    ).toBe('retry');
  });
});
