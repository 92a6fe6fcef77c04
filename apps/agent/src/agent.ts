/**
 * The agent: dials its edge(s), registers, heartbeats, runs assignments against its backend, and
 * reconnects forever with exponential backoff and full jitter when an edge goes away. With several
 * edges (`--edge a,b`) it keeps one link per edge (edge-link.ts) and serves runs from any.
 *
 * Drain (proto `Drain`, per edge): `drain:true` rejects that edge's new assignments and keeps
 * in-flight runs; `drain:false` undoes it; `deregister:true` closes that edge's Control once its
 * runs are over. The agent stops once every link has stopped. `shutdown()` (SIGTERM) drains every
 * link, waits for in-flight runs up to the deadline, then cancels what is left and deregisters.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { MessageInitShape } from '@bufbuild/protobuf';
import type { HeartbeatSchema } from '@iop/proto';
import type { Logger } from 'pino';
import { createLogger, sleep } from '@iop/core';
import type { Backend, BackendMetrics } from './backends/backend.js';
import { EdgeLink, type LinkHost } from './edge-link.js';
import { KvResidency } from './kv-cache/kv-residency.js';
import type { AgentOptions } from './options.js';
import type { RunExecution } from './run-execution.js';
import { SlotWaiters } from './slot-waiters.js';

/** The agent's version, from its package.json. */
export const AGENT_VERSION: string = (
  JSON.parse(readFileSync(join(__dirname, '..', 'package.json'), 'utf8')) as { version: string }
).version;

/** Longest wait of a heartbeat for the backend probe, ms: a fifth of the heartbeat period, at most 1 s. */
function probeWaitMs(heartbeatMs: number): number {
  return Math.min(1_000, Math.max(50, Math.floor(heartbeatMs / 5)));
}
/** Load changes within this window share one report, ms. */
const LOAD_REPORT_COALESCE_MS = 10;
/** How long backend metrics read for a heartbeat are reused by load reports, ms. */
const METRICS_REUSE_MS = 1_000;

export class Agent implements LinkHost {
  readonly logger: Logger;
  /** Resolves when the agent stopped (close, shutdown, or deregistered by every edge). */
  readonly stopped: Promise<void>;
  /** Resolves when the agent first registered with one of its edges (its readiness). */
  readonly registered: Promise<void>;
  private markRegistered!: () => void;
  readonly agentVersion = AGENT_VERSION;
  /** One link per edge, in the order of `edgeUrls`. */
  readonly links: readonly EdgeLink[];
  private draining = false;
  private idleWaiters: (() => void)[] = [];
  private metricsPending: Promise<BackendMetrics> | undefined;
  /** Backend requests in flight over every link. */
  readonly backendGauge = { open: 0 };
  private lastMetrics: { value: BackendMetrics; atMs: number } | undefined;
  private loadReport: NodeJS.Timeout | undefined;
  /**
   * Assignments that found every slot taken. With several edges two may wait per slot (each edge
   * learns the others' load late). With one edge, as many as runs being stopped: that edge frees a
   * run's slot when it cancels the run, the agent a moment later, once the backend request and the
   * Run call have closed; any other assignment beyond the slots is the edge's mistake, rejected at once.
   */
  readonly slotWaiters = new SlotWaiters(() =>
    this.links.length > 1 ? 2 * this.options.maxConcurrency : this.stoppingRuns(),
  );
  /** The backend's KV events and the prefixes they hold (`kvEvents.endpoint` set), else undefined. */
  readonly kvResidency: KvResidency | undefined;

  constructor(
    readonly options: AgentOptions,
    readonly backend: Backend,
  ) {
    this.logger =
      options.logger ??
      createLogger({
        name: 'iop-agent',
        level: options.logLevel,
        base: { agentId: options.agentId },
        ...(options.logFormat === undefined ? {} : { format: options.logFormat }),
      });
    this.registered = new Promise((resolve) => (this.markRegistered = resolve));
    const { endpoint } = options.kvEvents;
    this.kvResidency =
      endpoint === undefined
        ? undefined
        : new KvResidency({
            events: { ...options.kvEvents, endpoint },
            backend,
            logger: this.logger,
            broadcast: (report) => {
              for (const link of this.links) link.sendResidency(report);
            },
          });
    this.kvResidency?.start();
    this.links = options.edgeUrls.map((url) => new EdgeLink(url, this, this.logger));
    this.stopped = this.whenLinksStop();
  }

  onRegistered(): void {
    this.markRegistered();
  }

  get inFlight(): number {
    return this.totalInFlight();
  }

  /** Runs in flight on every edge, by run id. */
  get activeRuns(): ReadonlyMap<string, RunExecution> {
    const runs = new Map<string, RunExecution>();
    for (const link of this.links) for (const [runId, run] of link.runs) runs.set(runId, run);
    return runs;
  }

  totalInFlight(): number {
    let count = 0;
    for (const link of this.links) count += link.runs.size;
    return count;
  }

  /** Runs still holding a slot while they stop (RunExecution.stopping). */
  private stoppingRuns(): number {
    let count = 0;
    for (const link of this.links) for (const run of link.runs.values()) if (run.stopping) count++;
    return count;
  }

  /** Whether the agent refuses new runs (its own drain; an edge may also drain its link only). */
  get isDraining(): boolean {
    return this.draining || this.links.every((link) => link.isDraining);
  }

  get agentDraining(): boolean {
    return this.draining;
  }

  /** Takes no new runs on any link (true) or takes them again (false); reported in the next heartbeats. */
  setDraining(draining: boolean): void {
    this.draining = draining;
    if (draining) this.slotWaiters.rejectAll();
    this.logger.info({ draining }, draining ? 'draining' : 'undrained');
    for (const link of this.links) link.sendHeartbeat();
  }

  /** Drains, waits for in-flight runs up to `deadlineMs`, cancels the rest, deregisters and stops. */
  async shutdown(deadlineMs = this.options.shutdownDeadlineMs): Promise<void> {
    this.logger.info({ inFlight: this.inFlight, deadlineMs }, 'shutting down');
    this.setDraining(true);
    const idle = this.whenIdle();
    const waited = new AbortController();
    await Promise.race([idle, sleep(deadlineMs, waited.signal)]);
    waited.abort();
    if (this.inFlight === 0) this.logger.info('deregistered');
    await this.close();
  }

  /** Stops at once: cancels in-flight runs, closes every Control stream and the backend. */
  async close(): Promise<void> {
    const runs = this.links.flatMap((link) => [...link.runs.values()]);
    for (const link of this.links) link.close();
    await Promise.allSettled(runs.map((run) => run.done));
    await this.stopped;
  }

  onRunDone(): void {
    if (this.totalInFlight() < this.options.maxConcurrency) this.slotWaiters.release();
    if (this.totalInFlight() > 0) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const waiter of waiters) waiter();
  }

  /**
   * With several edges, every change of the load (a run started or ended on any link) is reported
   * to every edge within `LOAD_REPORT_COALESCE_MS` (changes in that window share one heartbeat),
   * so no edge assigns runs the agent has no slot for. One edge counts its own runs exactly and
   * needs no report.
   */
  onLoadChanged(): void {
    if (this.links.length < 2 || this.loadReport !== undefined) return;
    this.loadReport = setTimeout(() => {
      this.loadReport = undefined;
      for (const link of this.links) link.reportLoad();
    }, LOAD_REPORT_COALESCE_MS);
    this.loadReport.unref();
  }

  /**
   * Figures for the next heartbeat. The backend probe (`/metrics`) runs on its own connection
   * (see the backend) and is waited for at most a fifth of the heartbeat period (≤ 1 s): a heartbeat never waits behind
   * runs, and a probe that is slow or fails is a missing figure, not a late heartbeat (an agent
   * whose backend is saturated is busy, not gone). A probe still running is shared by the next
   * heartbeat instead of starting another one; load reports (far more frequent than heartbeats)
   * reuse figures read within `METRICS_REUSE_MS`.
   */
  async heartbeatFigures(periodMs = this.options.heartbeatMs): Promise<MessageInitShape<typeof HeartbeatSchema>> {
    let metrics: BackendMetrics = {};
    const cached = this.lastMetrics;
    if (cached !== undefined && Date.now() - cached.atMs < METRICS_REUSE_MS) {
      metrics = cached.value;
    } else if (this.backend.metrics !== undefined) {
      this.metricsPending ??= this.backend
        .metrics()
        .then((value) => {
          this.lastMetrics = { value, atMs: Date.now() };
          return value;
        })
        .catch(() => ({}))
        .finally(() => (this.metricsPending = undefined));
      const answered = new AbortController();
      const late = sleep(probeWaitMs(periodMs), answered.signal).then((): BackendMetrics => ({}));
      metrics = await Promise.race([this.metricsPending, late]);
      answered.abort();
    }
    return {
      inFlight: this.totalInFlight(),
      backendInFlight: this.backendGauge.open,
      queued: 0,
      sentAtMs: BigInt(Date.now()),
      ...(metrics.kvCacheUsage === undefined ? {} : { kvCacheUsage: metrics.kvCacheUsage }),
      ...(metrics.waiting === undefined ? {} : { backendWaiting: metrics.waiting }),
    };
  }

  private async whenLinksStop(): Promise<void> {
    try {
      await Promise.all(this.links.map((link) => link.stopped));
    } finally {
      this.kvResidency?.close();
      await this.backend.close().catch((error: unknown) => this.logger.warn({ err: error }, 'backend close failed'));
      this.logger.info('stopped');
    }
  }

  private whenIdle(): Promise<void> {
    if (this.totalInFlight() === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }
}
