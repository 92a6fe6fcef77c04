/**
 * The agent's Prometheus metrics (prom-client), served on its own port (health-server.ts). Labels
 * are bounded: `model` is a served model id of this agent's backend, `edge` a configured edge URL.
 *
 * - `iop_agent_backend_requests_total{model,status}`: backend calls by HTTP status, or `error`
 *   when no status came (connection refused, timeout, cancelled before the answer).
 * - `iop_agent_backend_errors_total{model,kind}`: failed backend calls: `connect` (no answer),
 *   `status_5xx`, `status_4xx`, `body` (the body broke off).
 * - `iop_agent_backend_time_to_first_byte_seconds{model}` and
 *   `iop_agent_backend_request_duration_seconds{model}`: backend latency to the response head,
 *   and to the end of the body.
 * - `iop_agent_runs_in_flight`, `iop_agent_max_concurrency`, `iop_agent_draining` (1 / 0) and
 *   `iop_agent_edge_registered{edge}` (1 while registered with that edge), read at scrape time.
 * - with `kvEvents.endpoint` set: `iop_agent_kv_event_batches_total{result="received|applied|replayed|dropped"}`,
 *   `iop_agent_kv_event_resyncs_total`, and `iop_agent_kv_resident{kind="blocks|prefixes"}` (the
 *   blocks the agent's index holds, the edge's prefix keys it maps), read at scrape time.
 * - process metrics with the prefix `iop_agent_` (prom-client defaults).
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** What the gauges read at scrape time. */
export interface AgentState {
  inFlight(): number;
  maxConcurrency: number;
  draining(): boolean;
  /** Per edge URL: registered now. */
  edges(): Array<{ edge: string; registered: boolean }>;
  /** The KV-event stream's figures, when the agent follows one. */
  kvEvents?(): KvEventFigures | undefined;
}

export interface KvEventFigures {
  received: number;
  applied: number;
  replayed: number;
  dropped: number;
  resyncs: number;
  blocks: number;
  prefixes: number;
}

const SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

export class AgentMetrics {
  readonly registry = new Registry();
  readonly backendRequests: Counter<'model' | 'status'>;
  readonly backendErrors: Counter<'model' | 'kind'>;
  readonly backendFirstByte: Histogram<'model'>;
  readonly backendDuration: Histogram<'model'>;

  constructor(state: AgentState) {
    const registers = [this.registry];
    this.backendRequests = new Counter({
      name: 'iop_agent_backend_requests_total',
      help: 'Backend calls by model and HTTP status ("error" when no status came).',
      labelNames: ['model', 'status'] as const,
      registers,
    });
    this.backendErrors = new Counter({
      name: 'iop_agent_backend_errors_total',
      help: 'Failed backend calls by kind: connect (no answer), status_5xx, status_4xx, body (the body broke off).',
      labelNames: ['model', 'kind'] as const,
      registers,
    });
    this.backendFirstByte = new Histogram({
      name: 'iop_agent_backend_time_to_first_byte_seconds',
      help: 'Backend call to its response head.',
      labelNames: ['model'] as const,
      buckets: SECONDS,
      registers,
    });
    this.backendDuration = new Histogram({
      name: 'iop_agent_backend_request_duration_seconds',
      help: 'Backend call to the end of its body.',
      labelNames: ['model'] as const,
      buckets: SECONDS,
      registers,
    });
    new Gauge({
      name: 'iop_agent_runs_in_flight',
      help: 'Runs in flight on this agent (all edges).',
      registers,
      collect() {
        this.set(state.inFlight());
      },
    });
    new Gauge({
      name: 'iop_agent_max_concurrency',
      help: 'Runs this agent takes at once (--max-concurrency).',
      registers,
      collect() {
        this.set(state.maxConcurrency);
      },
    });
    new Gauge({
      name: 'iop_agent_draining',
      help: '1 while the agent takes no new runs, else 0.',
      registers,
      collect() {
        this.set(state.draining() ? 1 : 0);
      },
    });
    new Gauge({
      name: 'iop_agent_edge_registered',
      help: '1 while this agent is registered with the edge, else 0.',
      labelNames: ['edge'] as const,
      registers,
      collect() {
        for (const { edge, registered } of state.edges()) this.set({ edge }, registered ? 1 : 0);
      },
    });
    new Counter({
      name: 'iop_agent_kv_event_batches_total',
      help: 'KV-event batches from the backend: received on the stream, applied, replayed to fill a gap, dropped (malformed or oversized).',
      labelNames: ['result'] as const,
      registers,
      collect() {
        const figures = state.kvEvents?.();
        if (figures === undefined) return;
        this.reset();
        for (const result of ['received', 'applied', 'replayed', 'dropped'] as const)
          this.inc({ result }, figures[result]);
      },
    });
    new Counter({
      name: 'iop_agent_kv_event_resyncs_total',
      help: 'KV-event resyncs (a gap the replay could not fill, a reconnect, an engine restart): every resident prefix forgotten.',
      registers,
      collect() {
        const figures = state.kvEvents?.();
        if (figures === undefined) return;
        this.reset();
        this.inc(figures.resyncs);
      },
    });
    new Gauge({
      name: 'iop_agent_kv_resident',
      help: "Blocks in the agent's KV-cache index and prefix keys it maps to them.",
      labelNames: ['kind'] as const,
      registers,
      collect() {
        const figures = state.kvEvents?.();
        if (figures === undefined) return;
        this.set({ kind: 'blocks' }, figures.blocks);
        this.set({ kind: 'prefixes' }, figures.prefixes);
      },
    });
    collectDefaultMetrics({ register: this.registry, prefix: 'iop_agent_', eventLoopMonitoringPrecision: 100 });
  }
}
