/**
 * The one owner of cancelling a client request's backend runs. Every run the request starts is
 * reported here (`openRun` does it as each attempt's run starts); whoever wants a run stopped —
 * the request stopped (client gone, deadline, write stall: the `RequestDeadline`'s signal), a
 * failed attempt (`openRun`), a gate attempt abandoned or ended (normalized/edge-dispatcher.ts), a
 * relayed stream that failed or whose client stopped reading (passthrough/relay.ts) — asks
 * `cancel`, which cancels a run still going at its agent (CancelRun) or direct provider, once.
 *
 * It also remembers whether the request was stopped while a backend worked on it (`stoppedMidRun`:
 * the run accepted and not ended), for the usage billed without the backend's count
 * (usage-recorder.ts).
 */
import { IopError } from '@iop/core';
import type { RunStream } from '../pool/run-stream.js';

export class RequestRuns {
  private latest: RunStream | undefined;
  private stoppedWhileRunning = false;

  /**
   * @param signal the request's stop signal (`RequestDeadline.signal`): when it aborts, the current run is cancelled
   *   with its reason's message ("client disconnected" when the reason has none).
   */
  constructor(private readonly signal?: AbortSignal) {
    signal?.addEventListener('abort', () => this.stop(reasonOf(signal)), { once: true });
  }

  /** The request's latest run (its current attempt's), if one started. */
  get current(): RunStream | undefined {
    return this.latest;
  }

  /** Whether the request was stopped while a backend worked on its run (accepted, not ended). */
  get stoppedMidRun(): boolean {
    return this.stoppedWhileRunning;
  }

  /** A run of the request started: it is the current one; cancelled at once when the request is already stopped. */
  started(run: RunStream): void {
    this.latest = run;
    if (this.signal?.aborted === true) this.cancel(run, reasonOf(this.signal));
  }

  /** Whether `run` (default: the current run) is still going. */
  running(run: RunStream | undefined = this.latest): boolean {
    return run !== undefined && !run.isFinished;
  }

  /** Cancels `run` (default: the current run) if it is still going; idempotent. */
  cancel(run: RunStream | undefined, reason: string): void {
    if (run !== undefined && !run.isFinished) run.cancel(reason);
  }

  /** The request stopped: the current run is cancelled, noting whether a backend was working on it. */
  stop(reason: string): void {
    const run = this.latest;
    if (run !== undefined && run.accepted && !run.isFinished) this.stoppedWhileRunning = true;
    this.cancel(run, reason);
  }

  /**
   * Cancels the run `run()` gives (read when `signal` aborts) with `reason` when `signal` aborts (a gate attempt's
   * signal, the signal `openRun` was given); returns the removal of that watch.
   */
  cancelOnAbort(signal: AbortSignal | undefined, run: () => RunStream | undefined, reason: string): () => void {
    if (signal === undefined) return () => {};
    const onAbort = () => this.cancel(run(), reason);
    signal.addEventListener('abort', onAbort, { once: true });
    return () => signal.removeEventListener('abort', onAbort);
  }
}

/** The message of an aborted request signal's reason (an IopError: deadline, stall), else "client disconnected". */
function reasonOf(signal: AbortSignal): string {
  const reason: unknown = signal.reason;
  return reason instanceof IopError ? reason.message : 'client disconnected';
}
