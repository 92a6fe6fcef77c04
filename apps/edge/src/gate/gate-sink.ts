/**
 * The gate's observations, made visible: Prometheus counters by model, filter and verdict, a
 * histogram of the bytes each attempt held at its peak (`iop_gate_held_bytes`), and one log line
 * per attempt that did not simply answer (request id, attempt number, provider, reason).
 * Tokens of discarded attempts are counted apart from the answer's (`attempt="failed"`).
 */
import { Counter, Histogram } from 'prom-client';
import type { GateSink } from '@iop/stream-gate';
import type { Logger } from '../logger.js';
import type { EdgeMetrics } from '../metrics.js';

export class GateMetrics {
  readonly verdicts: Counter<'model' | 'filter' | 'verdict'>;
  readonly attempts: Counter<'model' | 'outcome'>;
  /** Per attempt: the most bytes the gate held at once (queued events + filter state), bytes. */
  readonly heldBytes: Histogram<'model'>;

  constructor(metrics: EdgeMetrics) {
    this.verdicts = new Counter({
      name: 'iop_gate_verdicts_total',
      help: 'Final verdict of each gate filter per attempt.',
      labelNames: ['model', 'filter', 'verdict'] as const,
      registers: [metrics.registry],
    });
    this.attempts = new Counter({
      name: 'iop_gate_attempts_total',
      help: 'Gate attempts by outcome (answered, retried, continued, failed, aborted).',
      labelNames: ['model', 'outcome'] as const,
      registers: [metrics.registry],
    });
    this.heldBytes = new Histogram({
      name: 'iop_gate_held_bytes',
      help: 'Bytes the stream gate held at the peak of each attempt (queued events plus filter state; bounded by maxHeldBytes).',
      labelNames: ['model'] as const,
      buckets: [256, 1024, 4096, 16_384, 65_536, 262_144, 1_048_576, 4_194_304, 16_777_216],
      registers: [metrics.registry],
    });
  }
}

/**
 * `knownModel` maps a client model name to a bounded label (unknown names become "unknown");
 * `policyOf` gives the model's gate policy label (`policyLabel`) for the tokens of discarded attempts.
 */
export function createGateSink(
  gateMetrics: GateMetrics,
  metrics: EdgeMetrics,
  log: Logger,
  knownModel: (model: string) => string,
  policyOf: (model: string) => string,
): GateSink {
  return {
    verdict(report) {
      gateMetrics.verdicts.inc({ model: knownModel(report.model), filter: report.filter, verdict: report.verdict });
      if (report.verdict === 'reject')
        log.info(
          { requestId: report.requestId, attempt: report.attempt, filter: report.filter, reason: report.reason },
          'gate rejected an attempt',
        );
    },
    attempt(report) {
      const model = knownModel(report.model);
      gateMetrics.attempts.inc({ model, outcome: report.outcome });
      gateMetrics.heldBytes.observe({ model }, report.peakHeldBytes);
      if (report.wasted && report.usage !== undefined) {
        const policy = policyOf(report.model);
        const add = (kind: string, value: number | undefined) => {
          if (value !== undefined && value > 0)
            metrics.tokens.inc({ model, kind, attempt: 'failed', mode: 'normalized', policy }, value);
        };
        add('prompt', report.usage.inputTokens);
        add('completion', report.usage.outputTokens);
      }
      const fields = {
        requestId: report.requestId,
        attempt: report.attempt,
        idempotencyKey: report.idempotencyKey,
        provider: report.provider,
        outcome: report.outcome,
        reason: report.reason,
        filter: report.filter,
        durationMs: Math.round(report.durationMs),
        committed: report.committed,
        peakHeldBytes: report.peakHeldBytes,
      };
      if (report.outcome === 'answered') log.debug(fields, 'gate attempt');
      else log.info(fields, 'gate attempt');
    },
    warning(report) {
      log.warn({ requestId: report.requestId, attempt: report.attempt, message: report.message }, 'gate warning');
    },
  };
}
