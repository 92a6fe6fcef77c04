/**
 * Runs in flight between the edge and the agents.
 *
 * `start()` assigns a run to an agent over its Control stream and returns a `RunHandle` whose
 * `frames` yield the run's ProviderTunnelFrames as the agent's Run call delivers them. Failures
 * of the tunnel itself (the agent rejected the run, disconnected, or sent nothing in time) arrive
 * as a synthesized ERROR frame, so consumers have one code path for every way a run can end.
 */
import { create } from '@bufbuild/protobuf';
import { newId } from '@iop/core';
import {
  ProviderTunnelFrameSchema,
  ProviderTunnelFrame_Kind as FrameKind,
  RunAssignmentSchema,
  type ProviderTunnelFrame,
} from '@iop/proto';
import { AsyncQueue } from '@iop/core';
import type { AgentSession } from './agent-session.js';

export { FrameKind };

/** Error codes of synthesized ERROR frames (the agent's own codes pass through unchanged). */
export type TunnelErrorCode = 'agent_disconnected' | 'run_rejected' | 'run_open_timeout' | 'edge_shutdown';

export interface RunRequest {
  requestId: string;
  /** Backend model id. */
  model: string;
  method: string;
  path: string;
  headers?: Record<string, string>;
  body: Uint8Array;
  idempotencyKey?: string;
  /** Give up when the agent has not opened the run's stream within this time, ms. */
  openTimeoutMs: number;
  /** Passed to the agent: give up when the backend sends no first byte in this time, ms (0 = agent default). */
  firstByteTimeoutMs?: number;
}

export class RunHandle {
  /** Frames of this run, in order; ends after END or ERROR. Bounded: a slow consumer slows the agent. */
  readonly frames = new AsyncQueue<ProviderTunnelFrame>(32);
  attached = false;
  private finished = false;
  private openTimer: NodeJS.Timeout | undefined;

  constructor(
    readonly runId: string,
    readonly session: AgentSession,
    private readonly onFinish: (handle: RunHandle) => void,
  ) {}

  get isFinished(): boolean {
    return this.finished;
  }

  armOpenTimeout(timeoutMs: number): void {
    this.openTimer = setTimeout(() => {
      if (!this.attached) this.failWith('run_open_timeout', `agent ${this.session.agentId} did not open the run within ${timeoutMs} ms`);
    }, timeoutMs);
    this.openTimer.unref();
  }

  /** Delivers a frame from the agent; resolves when the consumer can take more (backpressure). */
  deliver(frame: ProviderTunnelFrame): Promise<void> | undefined {
    if (this.finished) return undefined;
    const pending = this.frames.push(frame);
    if (frame.kind === FrameKind.END || frame.kind === FrameKind.ERROR) this.finish();
    return pending;
  }

  /** Ends the run with a synthesized ERROR frame (tunnel-level failure). */
  failWith(code: TunnelErrorCode, message: string): void {
    if (this.finished) return;
    void this.frames.push(create(ProviderTunnelFrameSchema, { runId: this.runId, kind: FrameKind.ERROR, errorCode: code, errorMessage: message }));
    this.finish();
  }

  /** The client went away or the edge gave up: tell the agent to abort the backend request. */
  cancel(reason: string): void {
    if (this.finished) return;
    this.session.cancel(this.runId, reason);
    this.finish();
  }

  private finish(): void {
    if (this.finished) return;
    this.finished = true;
    if (this.openTimer !== undefined) clearTimeout(this.openTimer);
    this.frames.close();
    this.onFinish(this);
  }
}

export class RunRegistry {
  private readonly runs = new Map<string, RunHandle>();
  /** Called after any run ended and its agent slot was released (the provider pool serves its queue). */
  onRunFinished: ((handle: RunHandle) => void) | undefined;

  get size(): number {
    return this.runs.size;
  }

  start(session: AgentSession, request: RunRequest): RunHandle {
    const runId = newId('run_');
    const handle = new RunHandle(runId, session, (finished) => {
      this.runs.delete(finished.runId);
      finished.session.release();
      this.onRunFinished?.(finished);
    });
    this.runs.set(runId, handle);
    handle.armOpenTimeout(request.openTimeoutMs);
    session.assign(
      create(RunAssignmentSchema, {
        runId,
        requestId: request.requestId,
        model: request.model,
        method: request.method,
        path: request.path,
        headers: request.headers ?? {},
        body: request.body,
        idempotencyKey: request.idempotencyKey ?? '',
        firstByteTimeoutMs: request.firstByteTimeoutMs ?? 0,
      }),
    );
    return handle;
  }

  /** The agent opened the run's stream: returns the handle, or undefined when the run is gone. */
  attach(runId: string, session?: AgentSession): RunHandle | undefined {
    const handle = this.runs.get(runId);
    if (handle === undefined || (session !== undefined && handle.session !== session)) return undefined;
    handle.attached = true;
    return handle;
  }

  reject(runId: string, reason: string): void {
    this.runs.get(runId)?.failWith('run_rejected', reason);
  }

  /**
   * Ends every run now with a synthesized ERROR frame (the edge's shutdown deadline passed) and
   * tells each agent to stop its backend request. Not retryable: consumers render it in-band.
   */
  failAll(code: TunnelErrorCode, message: string): number {
    const handles = [...this.runs.values()];
    for (const handle of handles) {
      handle.session.cancel(handle.runId, message);
      handle.failWith(code, message);
    }
    return handles.length;
  }

  /** The agent's Control stream ended: every run of it fails. */
  failSession(session: AgentSession): void {
    for (const handle of [...this.runs.values()]) {
      if (handle.session === session) handle.failWith('agent_disconnected', `agent ${session.agentId} disconnected`);
    }
  }
}
