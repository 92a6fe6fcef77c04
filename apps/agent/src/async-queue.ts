/**
 * A push-fed async iterable: producers `push()` values, one consumer iterates them in order.
 * Used for the Control stream's outgoing messages and the embedded backend's response bytes.
 * `close()` ends iteration after the buffered values; `fail(error)` makes the consumer throw
 * once the buffer is drained.
 */
export class AsyncQueue<T> implements AsyncIterable<T> {
  private readonly buffer: T[] = [];
  private waiter: ((result: IteratorResult<T>) => void) | undefined;
  private failWaiter: ((error: unknown) => void) | undefined;
  private closed = false;
  private error: unknown = undefined;
  private failed = false;

  /** Values waiting for the consumer. */
  get size(): number {
    return this.buffer.length;
  }

  get isClosed(): boolean {
    return this.closed || this.failed;
  }

  push(value: T): void {
    if (this.closed || this.failed) return;
    const waiter = this.waiter;
    if (waiter !== undefined) {
      this.waiter = undefined;
      this.failWaiter = undefined;
      waiter({ value, done: false });
    } else {
      this.buffer.push(value);
    }
  }

  close(): void {
    if (this.closed || this.failed) return;
    this.closed = true;
    const waiter = this.waiter;
    this.waiter = undefined;
    this.failWaiter = undefined;
    waiter?.({ value: undefined, done: true });
  }

  fail(error: unknown): void {
    if (this.closed || this.failed) return;
    this.failed = true;
    this.error = error;
    const failWaiter = this.failWaiter;
    this.waiter = undefined;
    this.failWaiter = undefined;
    failWaiter?.(error);
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    return {
      next: () => {
        if (this.buffer.length > 0) return Promise.resolve({ value: this.buffer.shift() as T, done: false });
        if (this.failed) return Promise.reject(this.error);
        if (this.closed) return Promise.resolve({ value: undefined, done: true });
        return new Promise<IteratorResult<T>>((resolve, reject) => {
          this.waiter = resolve;
          this.failWaiter = reject;
        });
      },
      return: () => {
        this.closed = true;
        this.buffer.length = 0;
        return Promise.resolve({ value: undefined, done: true });
      },
      // The consumer failed (Connect signals a broken stream this way): stop, like a generator that does not catch.
      throw: (error: unknown) => {
        this.closed = true;
        this.buffer.length = 0;
        return Promise.reject(error);
      },
    };
  }
}
