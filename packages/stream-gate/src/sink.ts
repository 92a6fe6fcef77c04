/**
 * Observation: the gate reports every attempt, each filter's final verdict per attempt and its
 * warnings through a `GateSink`. The edge adapts it to Prometheus counters (by model, filter and
 * verdict) and to log lines carrying the request id and attempt number.
 */
import type { Usage } from '@iop/core';

/** One filter's final verdict on one attempt (`hold` when the attempt ended before it decided). */
export interface VerdictReport {
  requestId: string;
  /** The model the client asked for. */
  model: string;
  attempt: number;
  filter: string;
  verdict: 'pass' | 'hold' | 'reject';
  /** Rejection reason. */
  reason?: string;
}

/**
 * How an attempt ended:
 * - `answered`: its output completed the answer (finish released);
 * - `retried`: failed before commit, a new attempt follows;
 * - `continued`: failed after commit, a continuation follows;
 * - `failed`: the gate gave up and released an error event;
 * - `aborted`: the client went away.
 */
export type AttemptOutcomeKind = 'answered' | 'retried' | 'continued' | 'failed' | 'aborted';

export interface AttemptReport {
  requestId: string;
  model: string;
  attempt: number;
  /** `<requestId>:<attempt>`. */
  idempotencyKey: string;
  /** The provider that served it, when the dispatcher said. */
  provider: string | undefined;
  outcome: AttemptOutcomeKind;
  /** Why it did not answer (the rejection reason or the upstream error message). */
  reason?: string;
  /** The rejecting filter, when a filter ended it. */
  filter?: string;
  /** Wall time of the attempt, ms. */
  durationMs: number;
  /** Whether any event had reached the client when the attempt ended. */
  committed: boolean;
  /** Usage the upstream reported for this attempt (undefined when unknown). */
  usage: Usage | undefined;
  /**
   * True when this attempt's usage is not part of the answer's usage (its output was discarded):
   * report it as the cost of failed attempts.
   */
  wasted: boolean;
  /**
   * The most bytes the gate held at once in this attempt (queued events plus filter state, the
   * measure `maxHeldBytes` bounds), bytes.
   */
  peakHeldBytes: number;
}

export interface WarningReport {
  requestId: string;
  model: string;
  attempt: number;
  message: string;
}

export interface GateSink {
  verdict(report: VerdictReport): void;
  attempt(report: AttemptReport): void;
  warning(report: WarningReport): void;
}

/** A sink that drops everything. */
export const noopSink: GateSink = {
  verdict() {},
  attempt() {},
  warning() {},
};
