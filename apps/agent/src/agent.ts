/**
 * The agent: dials the edge, registers, heartbeats, runs assignments against its backend, and
 * reconnects forever with exponential backoff and full jitter when the edge goes away.
 *
 * Drain (proto `Drain`): `drain:true` rejects new assignments and keeps in-flight runs;
 * `drain:false` undoes it; `deregister:true` closes Control once in-flight runs are over and stops
 * the agent. `shutdown()` (SIGTERM) drains and deregisters locally, waits up to the deadline, then
 * cancels what is left.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Code, ConnectError, createClient, type Client } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { create } from '@bufbuild/protobuf';
import { ModelInfoSchema, RunRejectedSchema, TunnelService, type CancelRun, type Drain, type Registered, type RunAssignment } from '@iop/proto';
import pino, { type Logger } from 'pino';
import type { Backend, BackendMetrics } from './backends/backend.js';
import { Backoff, sleep } from './backoff.js';
import { ControlSession } from './control-session.js';
import type { AgentOptions } from './options.js';
import { RunExecution } from './run-execution.js';

/** The agent's version, from its package.json. */
export const AGENT_VERSION: string = (JSON.parse(readFileSync(join(__dirname, '..', 'package.json'), 'utf8')) as { version: string }).version;

export class Agent {
  readonly logger: Logger;
  /** Resolves when the agent stopped (close, shutdown, or deregistered by the edge). */
  readonly stopped: Promise<void>;
  private readonly client: Client<typeof TunnelService>;
  private readonly runs = new Map<string, RunExecution>();
  private readonly stop = new AbortController();
  private readonly backoff: Backoff;
  private session: ControlSession | undefined;
  private draining = false;
  private deregisterWhenIdle = false;
  private idleWaiters: (() => void)[] = [];
  private metricsPending: Promise<BackendMetrics> | undefined;

  constructor(
    private readonly options: AgentOptions,
    private readonly backend: Backend,
  ) {
    this.logger = options.logger ?? pino({ level: options.logLevel, base: { agentId: options.agentId } });
    this.backoff = new Backoff({ baseMs: options.reconnectBaseMs, capMs: options.reconnectCapMs });
    const transport = createGrpcTransport({
      baseUrl: options.edgeUrl,
      nodeOptions: options.tlsCa === undefined ? undefined : { ca: readFileSync(options.tlsCa) },
    });
    this.client = createClient(TunnelService, transport);
    this.stopped = this.connectLoop();
  }

  get inFlight(): number {
    return this.runs.size;
  }

  /** Runs in flight, by run id. */
  get activeRuns(): ReadonlyMap<string, RunExecution> {
    return this.runs;
  }

  get isDraining(): boolean {
    return this.draining;
  }

  /** Takes no new runs (true) or takes them again (false); reported in the next heartbeat. */
  setDraining(draining: boolean): void {
    this.draining = draining;
    this.logger.info({ draining }, draining ? 'draining' : 'undrained');
    this.session?.sendHeartbeat();
  }

  /** Drains, waits for in-flight runs up to `deadlineMs`, cancels the rest, deregisters and stops. */
  async shutdown(deadlineMs = this.options.shutdownDeadlineMs): Promise<void> {
    this.logger.info({ inFlight: this.runs.size, deadlineMs }, 'shutting down');
    this.setDraining(true);
    const idle = this.whenIdle();
    const timer = { id: undefined as NodeJS.Timeout | undefined };
    const deadline = new Promise<void>((resolve) => (timer.id = setTimeout(resolve, deadlineMs)));
    await Promise.race([idle, deadline]);
    clearTimeout(timer.id);
    await this.close();
  }

  /** Stops at once: cancels in-flight runs, closes Control and the backend. */
  async close(): Promise<void> {
    if (!this.stop.signal.aborted) {
      for (const run of this.runs.values()) run.cancel('agent shutting down');
      this.session?.end(0);
      this.stop.abort(new Error('agent closed'));
    }
    await Promise.allSettled([...this.runs.values()].map((run) => run.done));
    await this.stopped;
  }

  private async connectLoop(): Promise<void> {
    const stop = this.stop.signal;
    try {
      while (!stop.aborted) {
        await this.connectOnce(stop);
        if (stop.aborted) break;
        const delayMs = this.backoff.next();
        this.logger.info({ delayMs }, 'reconnecting');
        await sleep(delayMs, stop);
      }
    } finally {
      await this.backend.close().catch((error: unknown) => this.logger.warn({ err: error }, 'backend close failed'));
      this.logger.info('stopped');
    }
  }

  /** One connection: discovery, Register, the Control stream until it ends. */
  private async connectOnce(stop: AbortSignal): Promise<void> {
    let models;
    try {
      models = await this.backend.models();
    } catch (error) {
      this.logger.warn({ err: error }, 'backend model discovery failed');
      return;
    }
    const session = new ControlSession({
      client: this.client,
      register: {
        agentId: this.options.agentId,
        joinToken: this.options.joinToken,
        models: models.map((model) => create(ModelInfoSchema, { id: model.id, contextLength: model.contextLength })),
        maxConcurrency: this.options.maxConcurrency,
        labels: this.options.labels,
        agentVersion: AGENT_VERSION,
        backend: this.backend.kind,
        capabilities: this.backend.capabilities,
      },
      handlers: {
        onRegistered: (registered) => this.onRegistered(registered),
        onAssign: (assignment) => this.onAssign(assignment),
        onCancel: (cancel) => this.onCancel(cancel),
        onDrain: (drain) => this.onDrain(drain),
        heartbeat: () => this.heartbeat(),
      },
      heartbeatFallbackMs: this.options.heartbeatMs,
      registeredTimeoutMs: 10_000,
    });
    this.session = session;
    try {
      await session.run(stop);
      if (!stop.aborted) this.logger.warn('control stream ended by the edge');
    } catch (error) {
      if (!stop.aborted) this.logConnectionError(error);
    } finally {
      this.session = undefined;
    }
    if (session.registeredAt !== undefined && performance.now() - session.registeredAt >= this.options.stableConnectionMs) {
      this.backoff.reset();
    }
  }

  private logConnectionError(error: unknown): void {
    const connectError = ConnectError.from(error);
    if (connectError.code === Code.Unauthenticated || connectError.code === Code.PermissionDenied) {
      this.logger.error(
        { code: Code[connectError.code], edge: this.options.edgeUrl },
        `the edge refused the join token (${connectError.rawMessage}); check --join-token / IOP_JOIN_TOKEN and the edge's configuration`,
      );
      return;
    }
    this.logger.warn({ code: Code[connectError.code], edge: this.options.edgeUrl, error: connectError.rawMessage }, 'edge connection lost');
  }

  private onRegistered(registered: Registered): void {
    this.logger.info(
      { sessionId: registered.sessionId, heartbeatIntervalMs: registered.heartbeatIntervalMs, edgeVersion: registered.edgeVersion },
      'registered',
    );
    if (this.draining) this.session?.sendHeartbeat();
  }

  private onAssign(assignment: RunAssignment): void {
    const reason = this.draining ? 'draining' : this.runs.size >= this.options.maxConcurrency ? 'at_capacity' : undefined;
    if (reason !== undefined || this.runs.has(assignment.runId)) {
      const why = reason ?? 'duplicate run_id';
      this.logger.info({ requestId: assignment.requestId, runId: assignment.runId, reason: why }, 'run rejected');
      this.session?.send({ case: 'runRejected', value: create(RunRejectedSchema, { runId: assignment.runId, reason: why }) });
      return;
    }
    const run = new RunExecution(assignment, {
      client: this.client,
      backend: this.backend,
      logger: this.logger,
      firstByteTimeoutMs: this.options.firstByteTimeoutMs,
      idleTimeoutMs: this.options.idleTimeoutMs,
    });
    this.runs.set(run.runId, run);
    void run.done.then(() => {
      this.runs.delete(run.runId);
      if (this.runs.size === 0) this.onIdle();
    });
  }

  private onCancel(cancel: CancelRun): void {
    const run = this.runs.get(cancel.runId);
    this.logger.info({ runId: cancel.runId, reason: cancel.reason, known: run !== undefined }, 'run cancelled by the edge');
    run?.cancel(cancel.reason || 'cancelled by the edge');
  }

  private onDrain(drain: Drain): void {
    this.setDraining(drain.drain || drain.deregister);
    if (drain.deregister) {
      this.deregisterWhenIdle = true;
      this.logger.info({ inFlight: this.runs.size }, 'deregistering once idle');
      if (this.runs.size === 0) this.onIdle();
    }
  }

  private onIdle(): void {
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const waiter of waiters) waiter();
    if (this.deregisterWhenIdle && !this.stop.signal.aborted) {
      this.logger.info('deregistered');
      this.session?.end();
      this.stop.abort(new Error('deregistered'));
    }
  }

  private whenIdle(): Promise<void> {
    if (this.runs.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private async heartbeat(): Promise<{ inFlight: number; queued: number; draining: boolean; sentAtMs: bigint; kvCacheUsage?: number; backendWaiting?: number }> {
    let metrics: BackendMetrics = {};
    if (this.backend.metrics !== undefined) {
      this.metricsPending ??= this.backend.metrics().finally(() => (this.metricsPending = undefined));
      metrics = await this.metricsPending.catch(() => ({}));
    }
    return {
      inFlight: this.runs.size,
      queued: 0,
      draining: this.draining,
      sentAtMs: BigInt(Date.now()),
      ...(metrics.kvCacheUsage === undefined ? {} : { kvCacheUsage: metrics.kvCacheUsage }),
      ...(metrics.waiting === undefined ? {} : { backendWaiting: metrics.waiting }),
    };
  }
}
