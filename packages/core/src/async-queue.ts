/**
 * A single-consumer async queue with optional backpressure (the edge's run frames, the agent's
 * Control messages and embedded-backend bytes).
 *
 * The producer calls `push(value)`: it returns `undefined` while fewer than `highWaterMark` values
 * wait, and otherwise a promise that resolves once the consumer has taken enough values — so a
 * producer that awaits it never runs ahead of the consumer by more than `highWaterMark` values.
 * This is how a slow HTTP client slows its run's HTTP/2 stream (and, through the agent, the backend).
 * The consumer iterates with `for await`. `close()` ends the iteration after the queued values;
 * `fail(error)` ends it with that error after the queued values.
 */
export class AsyncQueue<T> implements AsyncIterable<T> {
  private readonly values: T[] = [];
  private head = 0;
  private waitingConsumer: ((result: IteratorResult<T>) => void) | undefined;
  private waitingConsumerReject: ((error: unknown) => void) | undefined;
  private waitingProducers: Array<() => void> = [];
  private closed = false;
  private failure: unknown = undefined;

  /**
   * @param highWaterMark queued values at which `push` starts returning a promise; Infinity = never (unbounded
   * producer).
   */
  constructor(private readonly highWaterMark = 16) {}

  get size(): number {
    return this.values.length - this.head;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  push(value: T): Promise<void> | undefined {
    if (this.closed) return undefined;
    const consumer = this.waitingConsumer;
    if (consumer !== undefined) {
      this.waitingConsumer = undefined;
      this.waitingConsumerReject = undefined;
      consumer({ value, done: false });
      return undefined;
    }
    this.values.push(value);
    if (this.size < this.highWaterMark) return undefined;
    return new Promise<void>((resolve) => this.waitingProducers.push(resolve));
  }

  /** The consumer is gone: drop what is queued and end. */
  private discard(): void {
    this.values.length = 0;
    this.head = 0;
    this.close();
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.settleConsumer();
    this.releaseProducers();
  }

  fail(error: unknown): void {
    if (this.closed) return;
    this.failure = error;
    this.close();
  }

  private settleConsumer(): void {
    if (this.waitingConsumer === undefined || this.size > 0) return;
    const resolve = this.waitingConsumer;
    const reject = this.waitingConsumerReject;
    this.waitingConsumer = undefined;
    this.waitingConsumerReject = undefined;
    if (this.failure !== undefined) reject?.(this.failure);
    else resolve({ value: undefined, done: true });
  }

  private releaseProducers(): void {
    const producers = this.waitingProducers;
    this.waitingProducers = [];
    for (const resolve of producers) resolve();
  }

  private take(): T {
    const value = this.values[this.head] as T;
    this.values[this.head] = undefined as T;
    this.head++;
    if (this.head === this.values.length) {
      this.values.length = 0;
      this.head = 0;
    }
    if (this.waitingProducers.length > 0 && this.size < this.highWaterMark / 2) this.releaseProducers();
    return value;
  }

  next(): Promise<IteratorResult<T>> {
    if (this.size > 0) return Promise.resolve({ value: this.take(), done: false });
    if (this.closed) {
      return this.failure !== undefined
        ? Promise.reject(this.failure)
        : Promise.resolve({ value: undefined, done: true });
    }
    return new Promise((resolve, reject) => {
      this.waitingConsumer = resolve;
      this.waitingConsumerReject = reject;
    });
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    return {
      next: () => this.next(),
      return: () => {
        this.discard();
        return Promise.resolve({ value: undefined, done: true });
      },
      // The consumer failed (Connect signals a broken stream this way): stop, like a generator that does not catch.
      throw: (error: unknown) => {
        this.discard();
        return Promise.reject(error);
      },
    };
  }
}
