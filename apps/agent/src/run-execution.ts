/**
 * One run: the backend call for a RunAssignment, relayed to the edge on its own client-streaming
 * `Run` call as ProviderTunnelFrames: RESPONSE_START, BODY..., USAGE?, END, or ERROR
 * (proto/iop/v1/tunnel.proto).
 *
 * Backpressure: frames come from a pull-based generator. Connect writes a frame and asks for the
 * next one only once HTTP/2 accepted the previous write, and the generator reads the next backend
 * slice only when asked, so a slow edge (flow control) slows the backend socket, never a buffer.
 *
 * Stopping: `cancel()` (CancelRun, shutdown), a timeout, or the Run call failing or ending from
 * the edge side aborts the run's AbortSignal, which aborts the backend request at once (undici
 * destroys the socket; the embedded backend stops generating).
 */
import { create } from '@bufbuild/protobuf';
import type { Client } from '@connectrpc/connect';
import { ProviderTunnelFrameSchema, ProviderTunnelFrame_Kind, type ProviderTunnelFrame, type RunAssignment, type TunnelService } from '@iop/proto';
import type { Logger } from 'pino';
import type { Backend } from './backends/backend.js';
import { RunFailure, toRunFailure } from './run-error.js';
import { UsageScanner, usageBodyKindOf } from './usage-scanner.js';

export interface RunExecutionOptions {
  client: Client<typeof TunnelService>;
  backend: Backend;
  logger: Logger;
  /** Agent default when the assignment gives 0, ms. */
  firstByteTimeoutMs: number;
  /** Longest wait for the next body slice from the backend, ms (time the edge holds us back does not count). */
  idleTimeoutMs: number;
}

export class RunExecution {
  readonly runId: string;
  /** Settles (never rejects) once the run is over and its Run call closed. */
  readonly done: Promise<void>;
  private readonly controller = new AbortController();
  private readonly logger: Logger;
  private firstByteTimer: NodeJS.Timeout | undefined;
  private idleTimer: NodeJS.Timeout | undefined;
  private idleArmed = false;
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
    this.logger = options.logger.child({ requestId: assignment.requestId, runId: assignment.runId });
    this.done = this.execute();
  }

  /** Aborts the run (CancelRun, shutdown); the backend request stops at once. */
  cancel(reason: string): void {
    if (!this.controller.signal.aborted) this.controller.abort(new RunFailure('cancelled', reason));
  }

  private async execute(): Promise<void> {
    this.logger.debug({ method: this.assignment.method, path: this.assignment.path, model: this.assignment.model }, 'run started');
    try {
      await this.options.client.run(this.frames());
    } catch (error) {
      if (!this.finished) this.logger.warn({ err: error }, 'run stream failed; backend request aborted');
    } finally {
      if (!this.finished) this.cancel('Run stream ended');
      this.clearTimers();
    }
  }

  private async *frames(): AsyncGenerator<ProviderTunnelFrame> {
    const signal = this.controller.signal;
    const runId = this.runId;
    const firstByteTimeoutMs = this.assignment.firstByteTimeoutMs || this.options.firstByteTimeoutMs;
    this.firstByteTimer = setTimeout(
      () => this.abortWith(new RunFailure('first_byte_timeout', `no first byte within ${firstByteTimeoutMs} ms`)),
      firstByteTimeoutMs,
    );
    let started = false;
    try {
      const response = await this.options.backend.handle({
        method: this.assignment.method,
        path: this.assignment.path,
        headers: this.assignment.headers,
        body: this.assignment.body,
        signal,
        requestId: this.assignment.requestId,
      });
      started = true;
      yield create(ProviderTunnelFrameSchema, {
        runId,
        kind: ProviderTunnelFrame_Kind.RESPONSE_START,
        status: response.status,
        headers: response.headers,
      });
      const usage = new UsageScanner(usageBodyKindOf(response.headers['content-type']));
      const body = response.body[Symbol.asyncIterator]();
      for (;;) {
        this.armIdle();
        const slice = await body.next();
        this.idleArmed = false;
        if (slice.done === true) break;
        if (this.bytes === 0) this.onFirstByte(response.status);
        this.bytes += slice.value.length;
        usage.push(slice.value);
        yield create(ProviderTunnelFrameSchema, { runId, kind: ProviderTunnelFrame_Kind.BODY, body: slice.value });
      }
      if (signal.aborted) throw signal.reason;
      const tokens = usage.finish();
      if (tokens !== undefined) {
        yield create(ProviderTunnelFrameSchema, { runId, kind: ProviderTunnelFrame_Kind.USAGE, usage: tokens });
      }
      this.finished = true;
      this.logger.info({ status: response.status, bytes: this.bytes, durationMs: this.elapsedMs(), usage: tokens }, 'run ended');
      yield create(ProviderTunnelFrameSchema, { runId, kind: ProviderTunnelFrame_Kind.END });
    } catch (error) {
      const failure = toRunFailure(error, signal, started);
      this.finished = true;
      this.clearTimers();
      // Whatever ended the run (the Run call failing under us, a backend error), the backend
      // request must stop now: an unconsumed body would otherwise keep the model generating.
      if (!signal.aborted) this.controller.abort(failure);
      const log = failure.code === 'cancelled' ? this.logger.info.bind(this.logger) : this.logger.warn.bind(this.logger);
      log({ code: failure.code, bytes: this.bytes, durationMs: this.elapsedMs(), err: failure.code === 'internal' ? error : undefined }, `run failed: ${failure.message}`);
      yield create(ProviderTunnelFrameSchema, {
        runId,
        kind: ProviderTunnelFrame_Kind.ERROR,
        errorCode: failure.code,
        errorMessage: failure.message,
      });
    } finally {
      this.clearTimers();
      // The generator can also be closed early by its consumer (return()): stop the backend too.
      if (!this.finished && !signal.aborted) this.controller.abort(new RunFailure('cancelled', 'Run stream closed'));
    }
  }

  private onFirstByte(status: number): void {
    clearTimeout(this.firstByteTimer);
    this.firstByteTimer = undefined;
    this.logger.debug({ status, ttfbMs: this.elapsedMs() }, 'run first byte');
  }

  /** Starts (or restarts) the idle clock while the run waits on the backend. */
  private armIdle(): void {
    if (this.bytes === 0) return; // the first-byte timer covers the wait for the first slice
    this.idleArmed = true;
    if (this.idleTimer === undefined) {
      const idleTimeoutMs = this.options.idleTimeoutMs;
      this.idleTimer = setTimeout(() => {
        if (this.idleArmed) this.abortWith(new RunFailure('idle_timeout', `no body byte for ${idleTimeoutMs} ms`));
      }, idleTimeoutMs);
    } else {
      this.idleTimer.refresh();
    }
  }

  private abortWith(failure: RunFailure): void {
    if (!this.controller.signal.aborted) this.controller.abort(failure);
  }

  private clearTimers(): void {
    clearTimeout(this.firstByteTimer);
    clearTimeout(this.idleTimer);
    this.firstByteTimer = undefined;
    this.idleTimer = undefined;
    this.idleArmed = false;
  }

  private elapsedMs(): number {
    return Math.round(performance.now() - this.startedAt);
  }
}
