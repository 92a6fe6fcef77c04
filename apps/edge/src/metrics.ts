/**
 * Prometheus metrics (prom-client), served at `GET /metrics`. Label sets are small and bounded:
 * model names come from registered agents, never from raw client input.
 */
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export class EdgeMetrics {
  readonly registry = new Registry();
  readonly requests = new Counter({
    name: 'iop_requests_total',
    help: 'Client requests by dialect, model and HTTP status.',
    labelNames: ['dialect', 'model', 'status'] as const,
    registers: [this.registry],
  });
  readonly tokens = new Counter({
    name: 'iop_tokens_total',
    help: 'Tokens by model and kind (prompt, completion, cached, reasoning). Failed attempts are counted with attempt="failed".',
    labelNames: ['model', 'kind', 'attempt'] as const,
    registers: [this.registry],
  });
  readonly duration = new Histogram({
    name: 'iop_request_duration_seconds',
    help: 'End-to-end request duration at the edge.',
    labelNames: ['dialect', 'model'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
    registers: [this.registry],
  });
  readonly ttft = new Histogram({
    name: 'iop_time_to_first_token_seconds',
    help: 'Time from request arrival to the first body byte sent to the client (streams).',
    labelNames: ['dialect', 'model'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });

  constructor() {
    // Event-loop lag sampled every 100 ms (prom-client's default 10 ms wakes an idle edge 100 times a second).
    collectDefaultMetrics({ register: this.registry, prefix: 'iop_edge_', eventLoopMonitoringPrecision: 100 });
  }
}
