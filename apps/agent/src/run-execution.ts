/**
 * One run: the backend call for a RunAssignment, relayed to the edge on its own client-streaming
 * `Run` call (`RunCall`, run-call.ts) as ProviderTunnelFrames: RESPONSE_START, BODY..., USAGE?,
 * END, or ERROR (proto/iop/v1/tunnel.proto).
 *
 * Backpressure: the relay (`@iop/backend`) writes each backend slice on the Run call as it is
 * read; while HTTP/2 holds the call's writes (flow control from a slow edge) it pauses the backend
 * body, so a slow edge slows the backend socket, never a buffer.
 *
 * The first frame is ACCEPTED, sent once the backend request has left, with the backend's first
 * frame or at most `ACCEPTED_HOLD_MS` later (see `execute`): the edge's run-accepted timeout ends
 * there and its first-byte clock starts (a non-stream answer's RESPONSE_START may come minutes later).
 *
 * Stopping: `cancel()` (CancelRun, shutdown), a timeout, or the Run call failing or ending from
 * the edge side aborts the run's AbortSignal, which aborts the backend request at once (undici
 * destroys the socket; the embedded backend stops generating).
 */
import type { ProviderTunnelFrame, RunAssignment } from '@iop/proto';
import {
  FrameKind,
  RunErrorCode,
  RunFailure,
  acceptedFrame,
  isFinalFrame,
  relayBackend,
  type FrameSink,
} from '@iop/backend';
import type { Logger } from 'pino';
import { traceFieldsOf } from '@iop/core';
import type { Backend } from './backends/backend.js';
import { RunCall, type RunConnection } from './run-call.js';

/**
 * Longest time a run's ACCEPTED waits for the backend's first frame to leave with it, ms: far below the edge's
 * run-accepted timeout (100 ms at the least), above a fast backend's answer (a cached or tiny one: well under 1 ms).
 */
export const ACCEPTED_HOLD_MS = 2;

export interface RunExecutionOptions {
  /** The HTTP/2 connection to the edge that assigned the run. */
  connection: RunConnection;
  /** The `session_id` of the Control session that assigned it (binds the Run call to it). */
  sessionId: string;
  backend: Backend;
  logger: Logger;
  /** Agent default when the assignment gives 0, ms. */
  firstByteTimeoutMs: number;
  /**
   * The agent's own limit (the assignment's, when shorter, wins): longest wait for the next body slice from the
   * backend, ms (time the edge holds us back does not count).
   */
  idleTimeoutMs: number;
  /** Counts the agent's open backend requests (+1 when this run asks its backend, −1 once that request is over). */
  backendGauge: BackendGauge;
  /**
   * The Run call could not be opened, or the transport reset it before the edge answered it (the
   * edge may never have seen it): the link tells the edge (RunRejected `run_call_reset`), which
   * retries the run at once instead of waiting out its accepted timeout.
   */
  onCallReset?: () => void;
}

/** The agent's backend requests in flight (reported in heartbeats as `backend_in_flight`). */
export interface BackendGauge {
  open: number;
}

export class RunExecution {
  readonly runId: string;
  /** Settles (never rejects) once the run is over and its Run call closed. */
  readonly done: Promise<void>;
  private readonly controller = new AbortController();
  private childLogger: Logger | undefined;
  /** Whether the agent logs at debug: the per-run debug lines are skipped whole when it does not. */
  private readonly debug: boolean;
  private finished = false;
  private readonly startedAt = performance.now();
  private bytes = 0;

  /** Body bytes read from the backend so far (each read only once the edge took the previous frame). */
  get bodyBytes(): number {
    return this.bytes;
  }

  constructor(
    private readonly assignment: RunAssignment,
    private readonly options: RunExecutionOptions,
  ) {
    this.runId = assignment.runId;
    this.debug = options.logger.isLevelEnabled('debug');
    this.done = this.execute();
  }

  /** The run's logger (its request and run ids, trace fields), made at its first line: most runs log none. */
  private get logger(): Logger {
    return (this.childLogger ??= this.options.logger.child({
      requestId: this.assignment.requestId,
      runId: this.assignment.runId,
      ...traceFieldsOf(this.assignment.headers),
    }));
  }

  /**
   * True once the run is being stopped (cancelled, or failed): its slot frees as soon as its backend request and Run
   * call have closed.
   */
  get stopping(): boolean {
    return this.controller.signal.aborted;
  }

  /** Aborts the run (CancelRun, shutdown); the backend request stops at once. */
  cancel(reason: string): void {
    if (!this.controller.signal.aborted) this.controller.abort(new RunFailure(RunErrorCode.CANCELLED, reason));
  }

  private async execute(): Promise<void> {
    if (this.debug)
      this.logger.debug(
        { method: this.assignment.method, path: this.assignment.path, model: this.assignment.model },
        'run started',
      );
    // The backend request goes first; the Run call (its HEADERS with ACCEPTED) opens at the check phase after the
    // backend's first frame, or `ACCEPTED_HOLD_MS` after the request when the backend takes longer, with every frame
    // made by then: a fast answer (a non-stream one whole, a stream's first token) and its acceptance reach the edge
    // in one write, one wake-up of the edge instead of two. On the core edge and agent may share, the Run call opened
    // first also held the backend request back: the edge, woken by it, took the CPU before undici wrote the request
    // (undici writes on a reused keep-alive socket at the check phase). ACCEPTED is always the first frame; while
    // the call is being opened (a connection redialling) the relay waits for it.
    let call: RunCall | undefined;
    const early: ProviderTunnelFrame[] = [];
    let opening: Promise<void> | undefined;
    let markOpen!: () => void;
    let openNow!: () => void;
    const due = new Promise<void>((resolve) => (openNow = resolve));
    const gauge = this.options.backendGauge;
    gauge.open++;
    // An answer's end, or a stream's first token, opens the call at once (its write then leaves in this loop turn).
    let eventStream = false;
    let openAtOnce!: () => void;
    const complete = new Promise<void>((resolve) => (openAtOnce = resolve));
    const relayed = this.relay((frame) => {
      if (call !== undefined) return call.push(frame);
      early.push(frame);
      openNow();
      if (frame.kind === FrameKind.RESPONSE_START)
        eventStream = frame.headers['content-type']?.startsWith('text/event-stream') === true;
      else if (isFinalFrame(frame) || (eventStream && frame.kind === FrameKind.BODY)) openAtOnce();
      return opening;
    }).finally(() => gauge.open--);
    const hold = setTimeout(openNow, ACCEPTED_HOLD_MS);
    try {
      await due;
      clearTimeout(hold);
      // Else the rest of this loop turn's frames join the first.
      await Promise.race([complete, new Promise<void>((resolve) => setImmediate(resolve))]);
      opening = new Promise<void>((resolve) => (markOpen = resolve));
      try {
        call = await RunCall.open(
          this.options.connection,
          this.options.sessionId,
          (error) => this.cancel(`Run call ended by the edge: ${error.rawMessage}`),
          [acceptedFrame(this.runId), ...early.splice(0)],
        );
        for (const frame of early.splice(0)) call.push(frame);
      } finally {
        markOpen();
      }
      await relayed;
      await call.end();
    } catch (error) {
      if (!this.finished) {
        call?.abort();
        this.logger.warn({ err: error }, 'run stream failed; backend request aborted');
      }
      if (call === undefined || !call.answered) this.options.onCallReset?.();
    } finally {
      if (!this.finished) this.cancel('Run stream ended');
      // The backend request stops with the run (a Run call that could not be opened); the relay never rejects.
      await relayed;
    }
  }

  private relay(sink: FrameSink): Promise<void> {
    return relayBackend(
      this.options.backend,
      {
        runId: this.runId,
        requestId: this.assignment.requestId,
        method: this.assignment.method,
        path: this.assignment.path,
        headers: this.assignment.headers,
        body: this.assignment.body,
        firstByteTimeoutMs: this.assignment.firstByteTimeoutMs || this.options.firstByteTimeoutMs,
        // The stricter of the edge's and the agent's own idle timeout.
        idleTimeoutMs:
          this.assignment.idleTimeoutMs > 0
            ? Math.min(this.assignment.idleTimeoutMs, this.options.idleTimeoutMs)
            : this.options.idleTimeoutMs,
      },
      this.controller,
      sink,
      {
        onFirstByte: (status) => {
          if (this.debug) this.logger.debug({ status, ttfbMs: this.elapsedMs() }, 'run first byte');
        },
        onBytes: (total) => {
          this.bytes = total;
        },
        onEnd: ({ status, bytes, usage }) => {
          this.finished = true;
          // debug: the edge logs every request at info with this agent's id, status, duration and
          // usage; a second line per run here was ~10 % of the agent's CPU at 64 concurrent runs.
          if (this.debug) this.logger.debug({ status, bytes, durationMs: this.elapsedMs(), usage }, 'run ended');
        },
        onFailure: (failure, bytes, error) => {
          this.finished = true;
          const log =
            failure.code === RunErrorCode.CANCELLED
              ? this.logger.info.bind(this.logger)
              : this.logger.warn.bind(this.logger);
          log(
            {
              code: failure.codeName,
              bytes,
              durationMs: this.elapsedMs(),
              err: failure.code === RunErrorCode.INTERNAL ? error : undefined,
            },
            `run failed: ${failure.message}`,
          );
        },
      },
    );
  }

  private elapsedMs(): number {
    return Math.round(performance.now() - this.startedAt);
  }
}
