/**
 * The end of one client request, across all its attempts and backoffs (`requestDeadlineMs`), and
 * the one AbortSignal that stops it: the client going away, the deadline passing, or the client
 * not reading (`writeStallTimeoutMs`). Whatever stops the request aborts `signal`; the reason is an
 * `IopError` (rendered in the client's dialect: a 504 before the first byte, an in-band error
 * after it) unless the client itself went away (`clientGone`), when nobody is left to answer.
 */
import { IopError } from '@iop/core';

export class RequestDeadline {
  /** `performance.now()` at which the request's time is up. */
  readonly expiresAt: number;
  private readonly controller = new AbortController();
  private readonly timer: NodeJS.Timeout;

  /** @param timeoutMs the request deadline, ms (config `requestDeadlineMs`). */
  constructor(readonly timeoutMs: number) {
    this.expiresAt = performance.now() + timeoutMs;
    this.timer = setTimeout(
      () => this.stop(new IopError('timeout', `the request did not complete within its ${timeoutMs} ms deadline`)),
      timeoutMs,
    );
    this.timer.unref();
  }

  /** Aborted when the request is stopped; `reason` says why. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Time left, ms (0 once passed). */
  remainingMs(): number {
    return Math.max(0, Math.round(this.expiresAt - performance.now()));
  }

  /** Stops the request with `reason` (first reason wins). */
  stop(reason: IopError | ClientGone): void {
    clearTimeout(this.timer);
    if (!this.controller.signal.aborted) this.controller.abort(reason);
  }

  /** The request ended: the deadline is no longer needed. */
  clear(): void {
    clearTimeout(this.timer);
  }

  /** Whether the client closed its connection (the first stop reason was ClientGone). */
  get clientGone(): boolean {
    return this.controller.signal.aborted && this.controller.signal.reason instanceof ClientGone;
  }

  /** The error to give the client, or undefined when it went away or nothing stopped the request. */
  get error(): IopError | undefined {
    const reason: unknown = this.controller.signal.reason;
    return this.controller.signal.aborted && reason instanceof IopError ? reason : undefined;
  }
}

/** Abort reason when the client closed its connection. */
export class ClientGone extends Error {
  constructor() {
    super('client disconnected');
  }
}

/** The IopError an aborted signal carries (deadline, write stall), or `fallback`. */
export function stopError<F extends IopError | undefined>(signal: AbortSignal | undefined, fallback: F): IopError | F {
  const reason: unknown = signal?.reason;
  return signal?.aborted === true && reason instanceof IopError ? reason : fallback;
}
