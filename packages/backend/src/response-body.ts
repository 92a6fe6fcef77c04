/**
 * One backend response read straight from undici's dispatcher (undici 7 "Dispatcher.dispatch",
 * the `onRequestStart`/`onResponse*` handler API): the status and headers resolve `started`, and
 * the body is an async iterator of the slices exactly as undici parsed them. It replaces
 * `Pool.request`, whose per-response `Readable` (stream state, events, buffering) and async
 * iterator over it were about 5 % of the agent's CPU per run for what the relay needs: slices,
 * pulled one at a time.
 *
 * Backpressure: a slice that arrives while no one waits for it pauses the response (undici stops
 * reading the socket); the next pull that empties the queue resumes it. So at most the slices of one
 * socket read are held, and a slow consumer slows the backend connection, as before.
 *
 * Stopping: `signal` aborts the request at once (before it was sent too); a consumer that stops
 * early (`return()`) aborts it as well, so no backend generation is left running. Errors reach
 * whoever waits: `started` before the status arrived, else the next pull.
 */
import type { Dispatcher } from 'undici';
import type { IncomingHttpHeaders } from 'node:http';

export interface ResponseHead {
  status: number;
  headers: IncomingHttpHeaders;
}

export class ResponseBody implements Dispatcher.DispatchHandler, AsyncIterableIterator<Uint8Array> {
  /** Resolves with the status and headers; rejects when the request fails before them. */
  readonly started: Promise<ResponseHead>;
  private resolveStart!: (head: ResponseHead) => void;
  private rejectStart!: (error: unknown) => void;
  private headSeen = false;
  private controller: Dispatcher.DispatchController | undefined;
  private readonly slices: Buffer[] = [];
  private head = 0;
  private ended = false;
  private failure: unknown = undefined;
  private waiting: { resolve: (result: IteratorResult<Uint8Array>) => void; reject: (error: unknown) => void } | undefined;

  constructor(private readonly signal: AbortSignal) {
    this.started = new Promise<ResponseHead>((resolve, reject) => {
      this.resolveStart = resolve;
      this.rejectStart = reject;
    });
    // Nobody may be awaiting `started` when a late failure rejects it.
    this.started.catch(() => undefined);
    signal.addEventListener('abort', this.onAbort, { once: true });
  }

  private readonly onAbort = () => {
    const reason = this.signal.reason instanceof Error ? this.signal.reason : new Error('request aborted');
    this.controller?.abort(reason);
    // Not yet dispatched, or already over on undici's side: settle waiters ourselves.
    this.fail(reason);
  };

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.signal.aborted) controller.abort(this.signal.reason instanceof Error ? this.signal.reason : new Error('request aborted'));
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders): void {
    this.headSeen = true;
    this.resolveStart({ status: statusCode, headers });
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    const waiting = this.waiting;
    if (waiting !== undefined) {
      this.waiting = undefined;
      waiting.resolve({ value: chunk, done: false });
      return;
    }
    this.slices.push(chunk);
    controller.pause();
  }

  onResponseEnd(): void {
    this.ended = true;
    this.signal.removeEventListener('abort', this.onAbort);
    const waiting = this.waiting;
    if (waiting !== undefined && this.head === this.slices.length) {
      this.waiting = undefined;
      waiting.resolve({ value: undefined, done: true });
    }
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    this.fail(error);
  }

  private fail(error: unknown): void {
    if (this.ended || this.failure !== undefined) return;
    this.failure = error;
    this.signal.removeEventListener('abort', this.onAbort);
    if (!this.headSeen) this.rejectStart(error);
    const waiting = this.waiting;
    if (waiting !== undefined) {
      this.waiting = undefined;
      waiting.reject(error);
    }
  }

  next(): Promise<IteratorResult<Uint8Array>> {
    if (this.head < this.slices.length) {
      const value = this.slices[this.head++]!;
      if (this.head === this.slices.length) {
        this.slices.length = 0;
        this.head = 0;
        if (!this.ended) this.controller?.resume();
      }
      return Promise.resolve({ value, done: false });
    }
    if (this.failure !== undefined) return Promise.reject(this.failure);
    if (this.ended) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve, reject) => {
      this.waiting = { resolve, reject };
    });
  }

  /** The consumer stops early: the backend request stops too. */
  return(): Promise<IteratorResult<Uint8Array>> {
    if (!this.ended && this.failure === undefined) {
      const reason = new Error('response body closed by its consumer');
      this.controller?.abort(reason);
      this.fail(reason);
    }
    this.slices.length = 0;
    this.head = 0;
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): this {
    return this;
  }
}
