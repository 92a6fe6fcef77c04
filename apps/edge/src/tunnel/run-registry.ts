/**
 * Runs in flight between the edge and the agents.
 *
 * `start()` assigns a run to an agent over its Control stream and returns a `RunHandle` (the
 * pool's `RunStream` for it) whose `frames` yield the run's ProviderTunnelFrames as the agent's
 * Run call delivers them. Failures of the tunnel itself (the agent rejected the run, disconnected,
 * or sent nothing in time) arrive as a synthesized ERROR frame, so consumers have one code path
 * for every way a run can end.
 *
 * Clocks of one run (docs/decisions/004-attempt-lifecycle.md): assigned → ACCEPTED within
 * `acceptedTimeoutMs` (`run_accepted_timeout`), then the first body byte within
 * `firstByteTimeoutMs` (`first_byte_timeout`; a non-stream answer's first byte is its whole
 * answer, so callers pass the request's remaining deadline for those). The idle clock between
 * body slices runs on the agent (it pauses while the edge holds the run back).
 *
 * A run the edge stops waiting for — a timeout here, `cancel()`, a failed Run stream — is
 * cancelled at the agent (CancelRun on Control) unless the agent itself ended it (END, ERROR,
 * RunRejected) or its Control stream is gone; the Run stream handler closes the run's stream too.
 */
import { newId } from '@iop/core';
import { FrameKind, errorFrame } from '@iop/backend';
import { RUN_CALL_RESET_REASON, RunErrorCode, runAssignment, type ProviderTunnelFrame } from '@iop/proto';
import { AsyncQueue } from '@iop/core';
import type { RunRequest, RunStream } from '../pool/run-stream.js';
import type { RunEnds } from '../pool/agent-directory.js';
import { KV_EVENTS_CAPABILITY, keysToMap } from '../pool/prefix-keys.js';
import { endRunSpans } from '../telemetry/request-tracing.js';
import type { AgentSession } from './agent-session.js';

export { FrameKind };

/** Error codes of synthesized ERROR frames (the agent's own codes pass through unchanged). */
export type TunnelErrorCode =
  | RunErrorCode.AGENT_DISCONNECTED
  | RunErrorCode.RUN_REJECTED
  | RunErrorCode.RUN_CALL_RESET
  | RunErrorCode.RUN_ACCEPTED_TIMEOUT
  | RunErrorCode.FIRST_BYTE_TIMEOUT
  | RunErrorCode.EDGE_SHUTDOWN;

/** A run on a tunnelled agent: its frames as the agent's Run call delivers them, and its clocks. */
export class RunHandle implements RunStream {
  /** Frames of this run, in order; ends after END or ERROR. Bounded: a slow consumer slows the agent. */
  readonly frames = new AsyncQueue<ProviderTunnelFrame>(32);
  attached = false;
  /** The agent accepted the run (ACCEPTED or any first frame). */
  accepted = false;
  private acceptedTimeoutMs = 0;
  /**
   * Called once when the edge ended the run itself (timeout, cancel), given by `RunRegistry.attach`: the Run stream
   * handler closes the run's stream.
   */
  private onCancelled: (() => void) | undefined;
  private finished = false;
  private sawBody = false;
  private timer: NodeJS.Timeout | undefined;
  private firstByteTimeoutMs = 0;

  constructor(
    readonly runId: string,
    readonly session: AgentSession,
    private readonly onFinish: (handle: RunHandle) => void,
  ) {}

  get isFinished(): boolean {
    return this.finished;
  }

  /** The agent's id. */
  get providerId(): string {
    return this.session.agentId;
  }

  /** The agent's Run stream took the run (`RunRegistry.attach`). */
  attach(onCancelled: (() => void) | undefined): void {
    this.attached = true;
    this.onCancelled = onCancelled;
  }

  /**
   * Arms the accepted clock now and the first-byte clock for when the agent accepts.
   * @param queueAllowanceMs added to the accepted clock until the assignment is `sent()` (a large
   *   one waiting its turn on the Control stream: large-assignments.ts)
   */
  armTimeouts(acceptedTimeoutMs: number, firstByteTimeoutMs: number, queueAllowanceMs = 0): void {
    this.firstByteTimeoutMs = firstByteTimeoutMs;
    this.acceptedTimeoutMs = acceptedTimeoutMs;
    this.armAccepted(queueAllowanceMs);
  }

  /**
   * The assignment has left the edge (a large one takes a while: write-receipts.ts): the accepted
   * clock starts again from now, so it measures the agent and not the edge's write queue.
   */
  sent(): void {
    if (this.accepted || this.finished) return;
    clearTimeout(this.timer);
    this.armAccepted();
  }

  private armAccepted(queueAllowanceMs = 0): void {
    const acceptedTimeoutMs = this.acceptedTimeoutMs;
    this.timer = setTimeout(() => {
      if (!this.accepted)
        this.failWith(
          RunErrorCode.RUN_ACCEPTED_TIMEOUT,
          `agent ${this.session.agentId} did not accept the run within ${acceptedTimeoutMs} ms`,
        );
    }, acceptedTimeoutMs + queueAllowanceMs);
    this.timer.unref();
  }

  /** Delivers a frame from the agent; resolves when the consumer can take more (backpressure). */
  deliver(frame: ProviderTunnelFrame): Promise<void> | undefined {
    if (this.finished) return undefined;
    if (!this.accepted) this.accept();
    if (frame.kind === FrameKind.ACCEPTED) return undefined;
    if (!this.sawBody && frame.kind !== FrameKind.RESPONSE_START) {
      this.sawBody = true;
      clearTimeout(this.timer);
    }
    const pending = this.frames.push(frame);
    if (frame.kind === FrameKind.END || frame.kind === FrameKind.ERROR) this.finish(undefined);
    return pending;
  }

  /**
   * Ends the run with a synthesized ERROR frame (tunnel-level failure); the agent is told to stop unless `fromAgent`.
   */
  failWith(code: TunnelErrorCode, message: string, fromAgent = false): void {
    if (this.finished) return;
    void this.frames.push(errorFrame(this.runId, code, message));
    this.finish(fromAgent ? undefined : message);
  }

  /** The client went away or the edge gave up: tell the agent to abort the backend request. */
  cancel(reason: string): void {
    if (this.finished) return;
    this.finish(reason);
  }

  private accept(): void {
    this.accepted = true;
    clearTimeout(this.timer);
    const timeoutMs = this.firstByteTimeoutMs;
    if (timeoutMs <= 0) return;
    this.timer = setTimeout(() => {
      if (!this.sawBody)
        this.failWith(
          RunErrorCode.FIRST_BYTE_TIMEOUT,
          `no first byte from agent ${this.session.agentId} within ${timeoutMs} ms`,
        );
    }, timeoutMs);
    this.timer.unref();
  }

  /** @param cancelReason set when the edge ends the run: the agent is told to abort it. */
  private finish(cancelReason: string | undefined): void {
    if (this.finished) return;
    this.finished = true;
    clearTimeout(this.timer);
    if (cancelReason !== undefined && !this.session.closed) this.session.cancel(this.runId, cancelReason);
    this.frames.close();
    this.onFinish(this);
    if (cancelReason !== undefined) this.onCancelled?.();
  }
}

export class RunRegistry implements RunEnds {
  private readonly runs = new Map<string, RunHandle>();
  private readonly finishListeners: Array<(handle: RunHandle) => void> = [];
  /** Ends a run's bookkeeping (one function for every run). */
  private readonly onFinish = (finished: RunHandle): void => {
    this.runs.delete(finished.runId);
    finished.session.release();
    endRunSpans(finished.runId, false); // the spans `AgentSession.start` bound to the run
    for (const listener of this.finishListeners) listener(finished);
  };

  /**
   * Calls `listener` after every run that ends from now on, once its agent slot is released and
   * its trace spans ended (the provider pool serves its queue).
   */
  addFinishListener(listener: (handle: RunHandle) => void): void {
    this.finishListeners.push(listener);
  }

  get size(): number {
    return this.runs.size;
  }

  start(session: AgentSession, request: RunRequest): RunHandle {
    const runId = newId('run_');
    const handle = new RunHandle(runId, session, this.onFinish);
    this.runs.set(runId, handle);
    handle.armTimeouts(
      request.acceptedTimeoutMs,
      request.firstByteTimeoutMs ?? 0,
      session.queueAllowanceMs(request.body.length),
    );
    session.assign(
      runAssignment({
        runId,
        requestId: request.requestId,
        model: request.model,
        method: request.method,
        path: request.path,
        headers: request.headers ?? {},
        body: request.body,
        idempotencyKey: request.idempotencyKey ?? '',
        firstByteTimeoutMs: request.firstByteTimeoutMs ?? 0,
        idleTimeoutMs: request.idleTimeoutMs ?? 0,
        ...(request.prefixKeys !== undefined && session.capabilities.has(KV_EVENTS_CAPABILITY)
          ? {
              prefixKeys: keysToMap(request.prefixKeys).map((entry) => ({
                key: BigInt(entry.key),
                messages: entry.messages,
              })),
            }
          : {}),
      }),
      () => handle.sent(),
    );
    return handle;
  }

  /**
   * The agent opened the run's stream: returns the handle, or undefined when the run is gone.
   * @param onCancelled called once if the edge ends the run itself from now on (timeout, cancel).
   */
  attach(runId: string, session?: AgentSession, onCancelled?: () => void): RunHandle | undefined {
    const handle = this.runs.get(runId);
    if (handle === undefined || (session !== undefined && handle.session !== session)) return undefined;
    handle.attach(onCancelled);
    return handle;
  }

  /**
   * The agent refused the run (RunRejected); a Run call reset before the edge saw it fails as `run_call_reset` (retried
   * at once), and only before ACCEPTED.
   */
  reject(runId: string, reason: string): void {
    const handle = this.runs.get(runId);
    if (handle === undefined) return;
    if (reason !== RUN_CALL_RESET_REASON) handle.failWith(RunErrorCode.RUN_REJECTED, reason, true);
    else if (!handle.accepted)
      handle.failWith(
        RunErrorCode.RUN_CALL_RESET,
        `the run's call to the agent was reset before the agent accepted it`,
        true,
      );
  }

  /**
   * Ends every run now with a synthesized ERROR frame (the edge's shutdown deadline passed) and
   * tells each agent to stop its backend request. Not retryable: consumers render it in-band.
   */
  failAll(code: TunnelErrorCode, message: string): number {
    const handles = [...this.runs.values()];
    for (const handle of handles) handle.failWith(code, message);
    return handles.length;
  }

  /** The agent's Control stream ended: every run of it fails. */
  failSession(session: AgentSession): void {
    for (const handle of [...this.runs.values()]) {
      if (handle.session === session)
        handle.failWith(RunErrorCode.AGENT_DISCONNECTED, `agent ${session.agentId} disconnected`, true);
    }
  }
}
