/**
 * One connected agent: what it registered, its live load, and the outbound half of its Control
 * stream. Created by the tunnel service when a Register is accepted; closed when the stream ends.
 * It is the pool's provider for that agent (`PoolAgent`, a `PoolProvider` of kind `agent`): `start` assigns a run
 * through the run registry and returns its `RunHandle` (a `RunStream`).
 */
import { create } from '@bufbuild/protobuf';
import {
  CancelRunSchema,
  DrainSchema,
  edgeMessage,
  type EdgeMessage,
  type Heartbeat,
  type ModelInfo,
  type Register,
  type RunAssignment,
} from '@iop/proto';
import { AsyncQueue } from '@iop/core';
import { providerNameOf, weightOfLabels } from '../pool/provider.js';
import type { PoolAgent } from '../pool/agent-directory.js';
import type { RunRequest, RunStream } from '../pool/run-stream.js';
import { traceTunnelRun } from '../telemetry/request-tracing.js';
import { LARGE_ASSIGNMENT_BYTES, LargeAssignments } from './large-assignments.js';

export interface AgentLoad {
  /** Runs in flight as the agent last reported. */
  reportedInFlight: number;
  /** Requests queued inside the agent. */
  queued: number;
  /**
   * Runs the agent holds for this edge (this session), as it last reported; undefined from agents that do not report
   * it.
   */
  sessionInFlight: number | undefined;
  /** The agent's backend requests in flight (every edge it serves), as it last reported. */
  backendInFlight: number | undefined;
  /** Backend KV-cache usage in [0, 1], when known. */
  kvCacheUsage: number | undefined;
  /** Requests waiting inside the backend, when known. */
  backendWaiting: number | undefined;
}

/** Where a session's runs are registered and assigned (the edge's `RunRegistry`). */
export interface SessionRuns {
  start(session: AgentSession, request: RunRequest): RunStream;
}

/** How long a drain state the edge asked for overrides heartbeats that disagree, ms. */
const DRAIN_ACK_WAIT_MS = 10_000;

export class AgentSession implements PoolAgent {
  readonly kind = 'agent' as const;
  readonly agentId: string;
  readonly sessionId: string;
  readonly models: readonly ModelInfo[];
  readonly maxConcurrency: number;
  readonly labels: Readonly<Record<string, string>>;
  /** The `weight` label when it is a positive number, else 1. */
  readonly weight: number;
  readonly agentVersion: string;
  readonly backend: string;
  readonly providerName: string;
  readonly capabilities: ReadonlySet<string>;
  readonly connectedAt = Date.now();
  /** Messages to the agent, consumed by the Control stream's response. */
  readonly outbound = new AsyncQueue<EdgeMessage>(Number.POSITIVE_INFINITY);
  /** Assignments with large bodies, written one at a time (large-assignments.ts). */
  private readonly large = new LargeAssignments((message) => this.send(message));
  /** Runs the edge has assigned and not yet seen finish. */
  inFlight = 0;
  /**
   * Runs the agent holds for other edges (an agent joined to several edges shares its
   * `maxConcurrency` across them): its last reported total less this edge's own at that moment.
   * The agent reports on every change of its load, so this stays current within a round trip.
   */
  othersInFlight = 0;
  /** Runs ever assigned (for the admin view and the distribution figures). */
  totalRuns = 0;
  load: AgentLoad = {
    reportedInFlight: 0,
    sessionInFlight: undefined,
    backendInFlight: undefined,
    queued: 0,
    kvCacheUsage: undefined,
    backendWaiting: undefined,
  };
  /** Takes no new runs: set at once by `drain()` (admin), and by the agent's heartbeats (e.g. its SIGTERM). */
  draining = false;
  /** The edge asked the agent to deregister once its in-flight runs are over. */
  deregistering = false;
  lastHeartbeatAt = Date.now();
  /**
   * Last message of any kind on the Control stream, Unix ms: liveness. An agent is dropped only
   * when its Control stream is silent for three heartbeat intervals, never for being busy.
   */
  lastMessageAt = Date.now();
  closed = false;
  private requestedDrain: { drain: boolean; at: number } | undefined;

  /** @param runs where its runs are registered (`start`). */
  constructor(
    register: Register,
    sessionId: string,
    private readonly runs: SessionRuns,
  ) {
    this.agentId = register.agentId;
    this.sessionId = sessionId;
    this.models = register.models;
    this.maxConcurrency = Math.max(1, register.maxConcurrency);
    this.labels = { ...register.labels };
    this.weight = weightOfLabels(this.labels);
    this.agentVersion = register.agentVersion;
    this.backend = register.backend;
    this.providerName = providerNameOf(this.labels, register.backend);
    this.capabilities = new Set(register.capabilities);
  }

  /** Whether the edge may assign it another run now: its own runs and other edges' leave a slot free. */
  get available(): boolean {
    return !this.closed && !this.draining && this.inFlight + this.othersInFlight < this.maxConcurrency;
  }

  /** The agent id (its provider id in the pool). */
  get id(): string {
    return this.agentId;
  }

  /** Whether it takes runs at all: connected and not draining (it may be at capacity). */
  get accepting(): boolean {
    return !this.closed && !this.draining;
  }

  /** Assigns a run to the agent now (counts in `inFlight` at once), with the attempt's trace context. */
  start(request: RunRequest): RunStream {
    const traced = traceTunnelRun(request.headers, this.agentId);
    const handle = this.runs.start(
      this,
      traced.headers === request.headers ? request : { ...request, headers: traced.headers },
    );
    traced.bind(handle.runId, handle.isFinished);
    return handle;
  }

  serves(model: string): boolean {
    return this.models.some((info) => info.id === model);
  }

  contextLength(model: string): number | undefined {
    return this.models.find((info) => info.id === model)?.contextLength || undefined;
  }

  apisOf(model: string): readonly string[] | undefined {
    const apis = this.models.find((info) => info.id === model)?.apis;
    return apis === undefined || apis.length === 0 ? undefined : apis;
  }

  onHeartbeat(heartbeat: Heartbeat): void {
    this.lastHeartbeatAt = Date.now();
    // A heartbeat sent before the agent saw our Drain must not undo it; the agent answers a Drain
    // with a heartbeat that reflects it, after which heartbeats are authoritative again.
    const pending = this.requestedDrain;
    if (pending !== undefined && heartbeat.draining !== pending.drain && Date.now() - pending.at < DRAIN_ACK_WAIT_MS) {
      // keep the requested state until the agent acknowledges it
    } else {
      this.requestedDrain = undefined;
      this.draining = heartbeat.draining;
    }
    this.othersInFlight = Math.max(0, heartbeat.inFlight - this.inFlight);
    this.load = {
      reportedInFlight: heartbeat.inFlight,
      // proto3 has no presence for these: an agent that predates them reports 0 for both, which
      // the admin view shows as is (such agents are not in a mixed fleet with in-flight checks).
      sessionInFlight: heartbeat.sessionInFlight,
      backendInFlight: heartbeat.backendInFlight,
      queued: heartbeat.queued,
      kvCacheUsage: heartbeat.kvCacheUsage,
      backendWaiting: heartbeat.backendWaiting,
    };
  }

  /**
   * The agent refused a run (after `release`). `at_capacity` means its slots are all taken, by
   * this edge's runs or another edge's: until its next load report, count the rest as others'.
   */
  onRunRejected(reason: string): void {
    if (reason === 'at_capacity')
      this.othersInFlight = Math.max(this.othersInFlight, this.maxConcurrency - this.inFlight);
  }

  /**
   * Queues an assignment. A large one (large-assignments.ts) waits its turn; `onSent` is called
   * once it has been written.
   */
  assign(assignment: RunAssignment, onSent?: () => void): void {
    this.inFlight++;
    this.totalRuns++;
    const message = edgeMessage({ case: 'assign', value: assignment });
    if (assignment.body.length >= LARGE_ASSIGNMENT_BYTES)
      this.large.add(assignment.runId, message, assignment.body.length, onSent ?? noop);
    else this.send(message);
  }

  /** The accepted-clock allowance of an assignment of `bodyBytes` queued now (large-assignments.ts), ms. */
  queueAllowanceMs(bodyBytes: number): number {
    return bodyBytes >= LARGE_ASSIGNMENT_BYTES ? this.large.allowanceMs(bodyBytes) : 0;
  }

  /** Called once per assigned run when it ends, however it ends. */
  release(): void {
    if (this.inFlight > 0) this.inFlight--;
  }

  cancel(runId: string, reason: string): void {
    // A large assignment not yet on the stream is dropped: the agent never hears of the run.
    if (this.large.drop(runId)) return;
    this.send(edgeMessage({ case: 'cancel', value: create(CancelRunSchema, { runId, reason }) }));
  }

  /** Drain (or undrain) at once on the edge side, and tell the agent (proto `Drain`). */
  drain(drain: boolean, deregister = false): void {
    this.draining = drain || deregister;
    this.deregistering = deregister;
    this.requestedDrain = { drain: drain || deregister, at: Date.now() };
    this.send(edgeMessage({ case: 'drain', value: create(DrainSchema, { drain, deregister }) }));
  }

  send(message: EdgeMessage): void {
    if (!this.closed) void this.outbound.push(message);
  }

  close(): void {
    this.closed = true;
    this.outbound.close();
  }
}

function noop(): void {}
