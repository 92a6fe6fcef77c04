/**
 * Gate configuration: release policy and budgets, per model group, with per-request overrides
 * (see `gate-header.ts`).
 */
import { IopError } from '@iop/core';

/**
 * When events reach the client:
 * - `passthrough`: at once (validators' holds are ignored; rejections still end the attempt);
 * - `evidence-tail`: text streams on; only what a filter holds waits (a trailing partial
 *   `<tool_call` / `<think` / stop sequence, tool-call fragments until the call validates);
 * - `buffered`: nothing until the whole attempt validated (strict).
 * In every policy `response-start` waits for the first releasable event, so a failure before
 * any content can still be retried invisibly; usage is released once, after the terminal event.
 */
export type ReleasePolicy = 'passthrough' | 'evidence-tail' | 'buffered';

export const RELEASE_POLICIES: readonly ReleasePolicy[] = ['passthrough', 'evidence-tail', 'buffered'];

export interface GateBudgets {
  /** Attempts per request, first one and continuations included. Default 3. */
  maxAttempts: number;
  /** Wall time for all attempts, ms. Default 600000 (10 min: long generations stream for minutes). */
  maxTotalMs: number;
  /**
   * UTF-8 bytes the gate may hold for one request (queued events plus filter state). Default
   * 8 MiB: a large tool call (a whole file as an argument) fits, a runaway stream does not.
   */
  maxHeldBytes: number;
}

export const DEFAULT_BUDGETS: Readonly<GateBudgets> = {
  maxAttempts: 3,
  maxTotalMs: 600_000,
  maxHeldBytes: 8 * 1024 * 1024,
};

/** Hard ceilings that no configuration may exceed. */
export const BUDGET_LIMITS: Readonly<GateBudgets> = {
  maxAttempts: 10,
  maxTotalMs: 3_600_000,
  maxHeldBytes: 256 * 1024 * 1024,
};

/**
 * Checks budgets up front.
 * @throws IopError `invalid_request` (400) naming the field and its limits.
 */
export function validateBudgets(budgets: GateBudgets, param = 'budgets'): GateBudgets {
  for (const key of ['maxAttempts', 'maxTotalMs', 'maxHeldBytes'] as const) {
    const value = budgets[key];
    if (!Number.isInteger(value) || value < 1 || value > BUDGET_LIMITS[key]) {
      throw new IopError('invalid_request', `${key} must be an integer from 1 to ${BUDGET_LIMITS[key]}, got ${value}`, {
        param: `${param}.${key}`,
      });
    }
  }
  return budgets;
}

/** Time source and timers; injectable so tests control time. */
export interface Clock {
  /** Milliseconds, monotonic enough for budgets. */
  now(): number;
  /** Calls `callback` after `ms`; returns a function that cancels it. */
  setTimer(callback: () => void, ms: number): () => void;
}

export const systemClock: Clock = {
  now: () => performance.now(),
  setTimer(callback, ms) {
    const timer = setTimeout(callback, ms);
    timer.unref?.();
    return () => clearTimeout(timer);
  },
};
