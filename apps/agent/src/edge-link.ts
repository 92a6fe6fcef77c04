/**
 * The agent's link to one edge: its own client, Control session, reconnect loop and drain state,
 * and the runs that edge assigned (each run's frames go back on that edge's `Run` call). An agent
 * given several edges (`--edge a,b`, high availability) holds one link per edge and serves runs
 * from any of them; capacity (`maxConcurrency`) is shared across links: the agent admits runs
 * itself (an assignment beyond it is rejected `at_capacity`) and, with several links, reports its
 * load to every edge on each change (`reportLoad`), so each edge counts the others' runs.
 *
 * Drain is per link: `Drain{drain}` from an edge stops that edge's assignments; `deregister`
 * closes that edge's Control once its runs are over and stops the link. The agent stops when
 * every link has stopped (or on shutdown). Reconnects: exponential backoff with full jitter, plus
 * a uniform random delay in [0, reconnectJitterMs) after losing a registered connection, so the
 * agents of a restarted edge do not all come back at the same instant.
 */
import { readFileSync } from 'node:fs';
import { Code, ConnectError } from '@connectrpc/connect';
import { create, type MessageInitShape } from '@bufbuild/protobuf';
import {
  ModelInfoSchema,
  RUN_CALL_RESET_REASON,
  RunRejectedSchema,
  sessionTag,
  type CancelRun,
  type Drain,
  type HeartbeatSchema,
  type Registered,
  type ResidencyReport,
  type RunAssignment,
} from '@iop/proto';
import type { Logger } from 'pino';
import type { Backend } from './backends/backend.js';
import { EdgeConnection } from './edge-connection.js';
import { sleep } from '@iop/core';
import { Backoff } from './backoff.js';
import { ControlSession } from './control-session.js';
import { KV_EVENTS_CAPABILITY, type KvResidency } from './kv-cache/kv-residency.js';
import type { AgentOptions } from './options.js';
import { RunExecution, type BackendGauge } from './run-execution.js';
import type { SlotWaiters } from './slot-waiters.js';

/** What a link needs from its agent. */
export interface LinkHost {
  readonly options: AgentOptions;
  readonly backend: Backend;
  readonly agentVersion: string;
  /** Runs in flight over every link (capacity is the agent's). */
  totalInFlight(): number;
  /** The agent itself drains (SIGTERM): every link refuses new runs. */
  readonly agentDraining: boolean;
  /** Heartbeat figures common to every link (backend metrics), within a heartbeat period of `periodMs`. */
  heartbeatFigures(periodMs: number): Promise<MessageInitShape<typeof HeartbeatSchema>>;
  /** A run of this link ended. */
  onRunDone(): void;
  /** The agent's backend requests in flight (every link). */
  readonly backendGauge: BackendGauge;
  /** A run started or ended on this link: the agent tells every edge its new load. */
  onLoadChanged(): void;
  /** This link registered with its edge. */
  onRegistered(): void;
  /** Assignments waiting for a slot (slot-waiters.ts), shared by every link. */
  readonly slotWaiters: SlotWaiters;
  /** The prefixes the backend's KV cache holds, when the agent follows its KV events. */
  readonly kvResidency: KvResidency | undefined;
}

export class EdgeLink {
  readonly logger: Logger;
  /** Resolves when the link stopped (close, or deregistered by its edge). */
  readonly stopped: Promise<void>;
  readonly runs = new Map<string, RunExecution>();
  /** The HTTP/2 connection to the edge (keepalive PINGs, reconnects), shared by the raw Control and Run calls. */
  private readonly connection: EdgeConnection;
  private readonly stop = new AbortController();
  private readonly backoff: Backoff;
  private session: ControlSession | undefined;
  /** The edge's `session_id` for the current Control session (a credential: logged as a prefix). */
  private sessionId = '';
  /**
   * The `resume_token` of this edge's latest Registered, presented on the next Register so a
   * reconnect after a network cut keeps the agent id. In memory only: a restarted agent has none,
   * and the edge gives it the id once the old session fails to answer a PING. Never logged.
   */
  private resumeToken = '';
  private draining = false;
  private deregisterWhenIdle = false;

  constructor(
    readonly edgeUrl: string,
    private readonly host: LinkHost,
    logger: Logger,
  ) {
    const { options } = host;
    this.logger = options.edgeUrls.length > 1 ? logger.child({ edge: edgeUrl }) : logger;
    this.backoff = new Backoff({
      baseMs: options.reconnectBaseMs,
      capMs: options.reconnectCapMs,
      lostConnectionJitterMs: options.reconnectJitterMs,
    });
    this.connection = new EdgeConnection(edgeUrl, {
      pingIntervalMs: options.edgePingIntervalMs,
      pingTimeoutMs: options.edgePingTimeoutMs,
      ...(options.tlsCa === undefined ? {} : { ca: readFileSync(options.tlsCa) }),
    });
    this.stopped = this.connectLoop().finally(() => this.closeConnectionWhenIdle());
  }

  /** Whether this link refuses new runs (its edge drained it, or the agent drains). */
  get isDraining(): boolean {
    return this.draining || this.host.agentDraining;
  }

  /** Whether a Control session with this edge is registered now. */
  get isRegistered(): boolean {
    return this.session?.registeredAt !== undefined;
  }

  get isStopped(): boolean {
    return this.stop.signal.aborted;
  }

  sendHeartbeat(): void {
    this.session?.sendHeartbeat();
  }

  /** Stops at once: cancels this link's runs and closes its Control stream. */
  close(graceMs = 0): void {
    if (this.stop.signal.aborted) return;
    for (const run of this.runs.values()) run.cancel('agent shutting down');
    this.session?.end(graceMs);
    this.stop.abort(new Error('agent closed'));
  }

  /** Closes the connection once the runs still sending (their final frames) are over, at most 5 s later. */
  private closeConnectionWhenIdle(): void {
    const idle = new AbortController();
    const deadline = sleep(5_000, idle.signal, { unref: true });
    void Promise.race([Promise.all([...this.runs.values()].map((run) => run.done)), deadline]).then(() => {
      idle.abort();
      this.connection.abort();
    });
  }

  private async connectLoop(): Promise<void> {
    const stop = this.stop.signal;
    while (!stop.aborted) {
      const lost = await this.connectOnce(stop);
      if (stop.aborted) break;
      const delayMs = lost ? this.backoff.nextAfterLostConnection() : this.backoff.next();
      this.logger.info({ delayMs, edge: this.edgeUrl }, 'reconnecting');
      await sleep(delayMs, stop);
    }
  }

  /**
   * One connection: discovery, Register, the Control stream until it ends. Returns whether a registered connection was
   * lost.
   */
  private async connectOnce(stop: AbortSignal): Promise<boolean> {
    const { options, backend } = this.host;
    let models;
    try {
      models = await backend.models();
    } catch (error) {
      this.logger.warn({ err: error }, 'backend model discovery failed');
      return false;
    }
    const session = new ControlSession({
      connection: this.connection,
      register: {
        agentId: options.agentId,
        joinToken: options.joinToken,
        models: models.map((model) =>
          create(ModelInfoSchema, { id: model.id, contextLength: model.contextLength, apis: [...(model.apis ?? [])] }),
        ),
        maxConcurrency: options.maxConcurrency,
        labels: options.labels,
        agentVersion: this.host.agentVersion,
        backend: backend.kind,
        capabilities:
          this.host.kvResidency === undefined ? backend.capabilities : [...backend.capabilities, KV_EVENTS_CAPABILITY],
        resumeToken: this.resumeToken,
      },
      handlers: {
        onRegistered: (registered) => this.onRegistered(registered),
        onAssign: (assignment) => this.onAssign(assignment),
        onCancel: (cancel) => this.onCancel(cancel),
        onDrain: (drain) => this.onDrain(drain),
        heartbeat: () => this.heartbeat(),
      },
      heartbeatFallbackMs: options.heartbeatMs,
      registeredTimeoutMs: 10_000,
    });
    this.session = session;
    try {
      await session.run(stop);
      if (!stop.aborted) this.logger.warn({ edge: this.edgeUrl }, 'control stream ended by the edge');
    } catch (error) {
      if (!stop.aborted) {
        this.logConnectionError(error);
        // The next attempt dials a new connection: the edge has dropped this session and its runs,
        // and an HTTP/2 session left over its memory limit by a reset stream (a large assignment
        // cut short) would refuse every new stream on the old connection (ENHANCE_YOUR_CALM).
        this.connection.abort();
      }
    } finally {
      this.session = undefined;
    }
    if (session.registeredAt !== undefined && performance.now() - session.registeredAt >= options.stableConnectionMs) {
      this.backoff.reset();
    }
    return session.registeredAt !== undefined;
  }

  private logConnectionError(error: unknown): void {
    const connectError = ConnectError.from(error);
    if (connectError.code === Code.Unauthenticated || connectError.code === Code.PermissionDenied) {
      this.logger.error(
        { code: Code[connectError.code], edge: this.edgeUrl },
        `the edge refused the join token (${connectError.rawMessage}); check --join-token / IOP_JOIN_TOKEN and the edge's configuration`,
      );
      return;
    }
    if (connectError.code === Code.AlreadyExists) {
      this.logger.error(
        { code: Code[connectError.code], edge: this.edgeUrl, agentId: this.host.options.agentId },
        `the edge refused the agent id (${connectError.rawMessage}); another running agent uses it: give each agent its own --agent-id / IOP_AGENT_ID`,
      );
      return;
    }
    this.logger.warn(
      { code: Code[connectError.code], edge: this.edgeUrl, error: connectError.rawMessage },
      'edge connection lost',
    );
  }

  private onRegistered(registered: Registered): void {
    this.sessionId = registered.sessionId;
    this.resumeToken = registered.resumeToken;
    this.logger.info(
      {
        session: sessionTag(registered.sessionId),
        heartbeatIntervalMs: registered.heartbeatIntervalMs,
        edgeVersion: registered.edgeVersion,
        edge: this.edgeUrl,
      },
      'registered',
    );
    this.host.onRegistered();
    if (this.isDraining) this.session?.sendHeartbeat();
    // A new session starts with no residency at the edge: it gets the whole state.
    for (const report of this.host.kvResidency?.snapshotReports() ?? [])
      this.session?.send({ case: 'residency', value: report });
  }

  private onAssign(assignment: RunAssignment, held = false): void {
    const reason = this.isDraining
      ? 'draining'
      : this.host.totalInFlight() >= this.host.options.maxConcurrency
        ? 'at_capacity'
        : undefined;
    // Every slot taken (another edge got the last one first, or this edge reused the slot of a run
    // it cancelled that is still stopping here): wait for the next one a while.
    if (reason === 'at_capacity' && !held && !this.runs.has(assignment.runId)) {
      const waiting = this.host.slotWaiters.hold({
        runId: assignment.runId,
        start: () => this.onAssign(assignment, true),
        reject: () => this.rejectRun(assignment, 'at_capacity'),
      });
      if (waiting) {
        this.logger.debug({ requestId: assignment.requestId, runId: assignment.runId }, 'run waits for a slot');
        this.host.onLoadChanged();
        return;
      }
    }
    if (reason !== undefined || this.runs.has(assignment.runId)) {
      const why = reason ?? 'duplicate run_id';
      this.logger.info({ requestId: assignment.requestId, runId: assignment.runId, reason: why }, 'run rejected');
      this.session?.send({
        case: 'runRejected',
        value: create(RunRejectedSchema, { runId: assignment.runId, reason: why }),
      });
      // The edge's picture of the load was wrong: send it (and every other edge) the real one.
      if (reason === 'at_capacity') this.host.onLoadChanged();
      return;
    }
    const run = new RunExecution(assignment, {
      connection: this.connection,
      sessionId: this.sessionId,
      backend: this.host.backend,
      logger: this.logger,
      firstByteTimeoutMs: this.host.options.firstByteTimeoutMs,
      idleTimeoutMs: this.host.options.idleTimeoutMs,
      backendGauge: this.host.backendGauge,
      onCallReset: () => this.rejectRun(assignment, RUN_CALL_RESET_REASON),
    });
    this.runs.set(run.runId, run);
    this.host.onLoadChanged();
    void run.done.then(() => {
      this.host.kvResidency?.afterRun(assignment);
      this.runs.delete(run.runId);
      this.host.onLoadChanged();
      if (this.runs.size === 0 && this.deregisterWhenIdle) this.deregister();
      this.host.onRunDone();
    });
  }

  private rejectRun(assignment: RunAssignment, why: string): void {
    this.logger.info({ requestId: assignment.requestId, runId: assignment.runId, reason: why }, 'run rejected');
    this.session?.send({
      case: 'runRejected',
      value: create(RunRejectedSchema, { runId: assignment.runId, reason: why }),
    });
  }

  private onCancel(cancel: CancelRun): void {
    if (this.host.slotWaiters.remove(cancel.runId)) {
      this.logger.info(
        { runId: cancel.runId, reason: cancel.reason },
        'run cancelled by the edge while waiting for a slot',
      );
      return;
    }
    const run = this.runs.get(cancel.runId);
    this.logger.info(
      { runId: cancel.runId, reason: cancel.reason, known: run !== undefined },
      'run cancelled by the edge',
    );
    run?.cancel(cancel.reason || 'cancelled by the edge');
  }

  private onDrain(drain: Drain): void {
    this.draining = drain.drain || drain.deregister;
    this.deregisterWhenIdle = drain.deregister;
    this.logger.info({ draining: this.draining, edge: this.edgeUrl }, this.draining ? 'draining' : 'undrained');
    this.session?.sendHeartbeat();
    if (drain.deregister) {
      this.logger.info({ inFlight: this.runs.size }, 'deregistering once idle');
      if (this.runs.size === 0) this.deregister();
    }
  }

  private deregister(): void {
    if (this.stop.signal.aborted) return;
    this.logger.info({ edge: this.edgeUrl }, 'deregistered');
    this.session?.end();
    this.stop.abort(new Error('deregistered'));
  }

  /**
   * Sends a residency report to this link's edge, when registered (a new session gets the whole state at registration).
   */
  sendResidency(report: ResidencyReport): void {
    if (this.isRegistered) this.session?.send({ case: 'residency', value: report });
  }

  /** Sends a heartbeat now (the agent's load changed), when connected. */
  reportLoad(): void {
    this.session?.sendHeartbeat();
  }

  private async heartbeat(): Promise<MessageInitShape<typeof HeartbeatSchema>> {
    const periodMs = this.session?.heartbeatIntervalMs ?? this.host.options.heartbeatMs;
    return {
      ...(await this.host.heartbeatFigures(periodMs)),
      sessionInFlight: this.runs.size,
      draining: this.isDraining,
    };
  }
}
