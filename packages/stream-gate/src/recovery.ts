/**
 * Recovery: what follows a failed attempt. Pure decision over the failure and the commit state
 * (packages/stream-gate/README.md "Recovery and budgets"):
 * - before commit, a provider fault (a retryable code, core's `isRetryableCode`; connection failure, cut
 *   stream) is retried exactly, away from the faulting provider; a rejection is retried as its
 *   filter directs (exactly, or with the corrective patch);
 * - after commit, only a continuation can recover (the released text as an assistant prefill),
 *   and only where the backend accepts a prefill and no tool call was released; otherwise the
 *   answer ends with an error event, never with a finish.
 */
import { isRetryableCode } from '@iop/core';
import type { ErrorCode, ErrorEvent } from '@iop/core';
import type { AttemptEnd } from './attempt-runner.js';

/**
 * Why a gate attempt failed: the output rejected by a filter, an upstream error event, a cut stream, the held bytes
 * over budget, or the gate's own time budget spent. Not the edge's `AttemptFailure` (pool/retry-policy.ts), which says
 * why a backend call failed before its first byte.
 */
export type GateFailure =
  Exclude<AttemptEnd, { kind: 'finished' } | { kind: 'aborted' }> | { kind: 'timeout'; maxTotalMs: number };

export type RecoveryStep =
  | { kind: 'retry'; patch: string | undefined; avoidProvider: boolean }
  | { kind: 'continue'; patch: string | undefined }
  | { kind: 'fail'; error: ErrorEvent };

export interface RecoveryState {
  /** Whether any event has reached the client. */
  committed: boolean;
  /** Whether a continuation is possible: the backend takes a prefill, text was released, no tool call was. */
  continuable: boolean;
  /** Whether the attempt budget allows another attempt. */
  attemptsLeft: boolean;
  /** Attempts made so far (for the final message). */
  attempts: number;
}

export function errorEvent(code: ErrorCode, message: string): ErrorEvent {
  return { type: 'error', code, message };
}

/** The error event the client gets if the gate gives up on this failure. */
export function failureError(failure: GateFailure, attempts: number): ErrorEvent {
  const after = attempts > 1 ? ` (after ${attempts} attempts)` : '';
  switch (failure.kind) {
    case 'rejected':
      return errorEvent(
        failure.rejection.code ?? 'upstream_error',
        `model output rejected by ${failure.filter}: ${failure.rejection.reason}${after}`,
      );
    case 'upstream-error':
      return attempts > 1 ? { ...failure.error, message: failure.error.message + after } : failure.error;
    case 'cut':
      return errorEvent('upstream_error', failure.message + after);
    case 'over-budget':
      return errorEvent(
        'upstream_error',
        `model output exceeded the held-bytes budget (${failure.heldBytes} bytes held)${after}`,
      );
    case 'timeout':
      return errorEvent('timeout', `the request exceeded its time budget of ${failure.maxTotalMs} ms${after}`);
  }
}

/** Whether the failure is the provider's fault (so another provider may do better). */
export function isProviderFault(failure: GateFailure): boolean {
  return failure.kind === 'cut' || (failure.kind === 'upstream-error' && isRetryableCode(failure.error.code));
}

/** Decides the next step after a failed attempt. */
export function decideRecovery(failure: GateFailure, state: RecoveryState): RecoveryStep {
  const fail: RecoveryStep = { kind: 'fail', error: failureError(failure, state.attempts) };
  if (!state.attemptsLeft || failure.kind === 'timeout' || failure.kind === 'over-budget') return fail;

  let patch: string | undefined;
  let continuable = true;
  if (failure.kind === 'rejected') {
    const { rejection } = failure;
    if (rejection.recovery === 'fail') return fail;
    if (rejection.recovery === 'retry-with-patch') patch = rejection.patch;
    continuable = rejection.continuable !== false;
  } else if (!isProviderFault(failure)) {
    return fail; // a non-retryable upstream error (400 context length, 401…) fails the same way anywhere
  }

  if (!state.committed) return { kind: 'retry', patch, avoidProvider: isProviderFault(failure) };
  if (continuable && state.continuable) return { kind: 'continue', patch };
  return fail;
}
