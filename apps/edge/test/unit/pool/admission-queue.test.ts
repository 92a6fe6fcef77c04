import { IopError } from '@iop/core';
import { AdmissionQueue, type Timers } from '../../../src/pool/admission-queue.js';

/** Timers driven by hand: `advance(ms)` fires what falls due, in order. */
class ManualTimers implements Timers {
  now = 0;
  private next = 1;
  private readonly pending = new Map<number, { at: number; callback: () => void }>();
  setTimeout(callback: () => void, ms: number): unknown {
    const id = this.next++;
    this.pending.set(id, { at: this.now + ms, callback });
    return id;
  }
  clearTimeout(handle: unknown): void {
    this.pending.delete(handle as number);
  }
  get count(): number {
    return this.pending.size;
  }
  advance(ms: number): void {
    this.now += ms;
    for (const [id, timer] of [...this.pending].sort((a, b) => a[1].at - b[1].at)) {
      if (timer.at > this.now) break;
      this.pending.delete(id);
      timer.callback();
    }
  }
}

/** A pool of `slots` slots; `take` is the tryAcquire callback, returning a release function. */
function slots(count: number) {
  let free = count;
  const take = () => {
    if (free === 0) return undefined;
    free--;
    return () => {
      free++;
    };
  };
  return { take, free: () => free };
}

const queue = { maxQueued: 2, maxWaitMs: 30_000 };

describe('AdmissionQueue', () => {
  it('admits at once while slots are free', async () => {
    const admission = new AdmissionQueue({ timers: new ManualTimers() });
    const pool = slots(2);
    await admission.acquire('g', queue, pool.take);
    await admission.acquire('g', queue, pool.take);
    expect(pool.free()).toBe(0);
    expect(admission.size('g')).toBe(0);
  });

  it('serves waiters in FIFO order as slots free', async () => {
    const timers = new ManualTimers();
    const admission = new AdmissionQueue({ timers });
    const pool = slots(1);
    const first = await admission.acquire('g', { maxQueued: 10, maxWaitMs: 30_000 }, pool.take);
    const order: number[] = [];
    const waiting = [1, 2, 3].map((n) =>
      admission.acquire('g', { maxQueued: 10, maxWaitMs: 30_000 }, pool.take).then((release) => {
        order.push(n);
        return release;
      }),
    );
    expect(admission.size('g')).toBe(3);
    first();
    admission.notify('g');
    const second = await waiting[0]!;
    second();
    admission.notify('g');
    (await waiting[1]!)();
    admission.notify('g');
    await waiting[2];
    expect(order).toEqual([1, 2, 3]);
    expect(admission.size('g')).toBe(0);
    expect(timers.count).toBe(0); // every wait timer was cleared
  });

  it('does not let a new arrival overtake a waiter', async () => {
    const admission = new AdmissionQueue({ timers: new ManualTimers() });
    const pool = slots(1);
    const release = await admission.acquire('g', queue, pool.take);
    const waiter = admission.acquire('g', queue, pool.take);
    release(); // a slot frees, but no notify yet
    const late = admission.acquire('g', queue, pool.take); // must queue behind, and serves the head
    await waiter;
    expect(admission.size('g')).toBe(1);
    void late.catch(() => undefined);
  });

  it('a retry (its attempt failed on its provider) waits ahead of first attempts, behind earlier retries', async () => {
    const admission = new AdmissionQueue({ timers: new ManualTimers() });
    const pool = slots(1);
    const busy = { maxQueued: 10, maxWaitMs: 30_000 };
    const release = await admission.acquire('g', busy, pool.take);
    const order: string[] = [];
    const releases: Array<() => void> = [];
    const served = (name: string) => (done: () => void) => {
      order.push(name);
      releases.push(done);
    };
    const waiting = [
      admission.acquire('g', busy, pool.take).then(served('first-1')),
      admission.acquire('g', busy, pool.take).then(served('first-2')),
      admission.acquire('g', busy, pool.take, undefined, true).then(served('retry-1')),
      admission.acquire('g', busy, pool.take, undefined, true).then(served('retry-2')),
      admission.acquire('g', busy, pool.take).then(served('first-3')),
    ];
    expect(admission.size('g')).toBe(5);
    release();
    // One slot: each waiter served frees it for the next.
    for (let index = 0; index < waiting.length; index++) {
      admission.notify('g');
      await new Promise((resolve) => setImmediate(resolve));
      releases[index]!();
    }
    await Promise.all(waiting);
    expect(order).toEqual(['retry-1', 'retry-2', 'first-1', 'first-2', 'first-3']);
  });

  it('a retry takes a free slot at once, ahead of the waiters, and is not refused by a full queue', async () => {
    const admission = new AdmissionQueue({ timers: new ManualTimers() });
    const pool = slots(1);
    const release = await admission.acquire('g', queue, pool.take);
    const first = admission.acquire('g', queue, pool.take);
    void admission.acquire('g', queue, pool.take).catch(() => undefined);
    // The queue is full (2 waiting): a first attempt is refused, a retry waits.
    await expect(admission.acquire('g', queue, pool.take)).rejects.toMatchObject({
      code: 'overloaded',
      reason: 'full',
    });
    const retry = admission.acquire('g', queue, pool.take, undefined, true);
    expect(admission.size('g')).toBe(3);
    // The refusal counts the waiters there are, past maxQueued.
    await expect(admission.acquire('g', queue, pool.take)).rejects.toMatchObject({
      message: 'the queue of `g` is full (3 waiting)',
    });
    release(); // a slot frees, no notify yet: the retry is at the head
    admission.notify('g');
    await retry;
    expect(admission.size('g')).toBe(2);
    void first.catch(() => undefined);
  });

  it('refuses with overloaded (429; Anthropic 529) and Retry-After when the queue is full', async () => {
    const admission = new AdmissionQueue({ timers: new ManualTimers(), retryAfterSeconds: 2 });
    const pool = slots(0);
    void admission.acquire('g', queue, pool.take).catch(() => undefined);
    void admission.acquire('g', queue, pool.take).catch(() => undefined);
    const error = await admission.acquire('g', queue, pool.take).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(IopError);
    expect(error).toMatchObject({
      code: 'overloaded',
      status: 429,
      reason: 'full',
      retryAfterSeconds: 2,
      message: 'the queue of `g` is full (2 waiting)',
    });
    expect(admission.stats()).toEqual({ queued: { g: 2 }, rejectedFull: 1, rejectedTimeout: 0 });
  });

  it('refuses at once with maxQueued 0', async () => {
    const admission = new AdmissionQueue({ timers: new ManualTimers() });
    await expect(admission.acquire('g', { maxQueued: 0, maxWaitMs: 1000 }, () => undefined)).rejects.toMatchObject({
      status: 429,
    });
  });

  it('refuses with 429 when the wait exceeds maxWaitMs, and frees the place', async () => {
    const timers = new ManualTimers();
    const admission = new AdmissionQueue({ timers });
    const pool = slots(0);
    const waiting = admission.acquire('g', queue, pool.take);
    timers.advance(29_999);
    expect(admission.size('g')).toBe(1);
    timers.advance(1);
    await expect(waiting).rejects.toMatchObject({
      code: 'overloaded',
      reason: 'timeout',
      retryAfterSeconds: 1,
      message: 'no provider of `g` was free within 30000 ms',
    });
    expect(admission.size('g')).toBe(0);
    expect(admission.stats().rejectedTimeout).toBe(1);
  });

  it('removes a waiter whose client went away, so the next one gets the slot', async () => {
    const timers = new ManualTimers();
    const admission = new AdmissionQueue({ timers });
    const pool = slots(1);
    const release = await admission.acquire('g', queue, pool.take);
    const controller = new AbortController();
    const gone = admission.acquire('g', queue, pool.take, controller.signal);
    const next = admission.acquire('g', queue, pool.take);
    controller.abort(new Error('client closed the connection'));
    await expect(gone).rejects.toThrow('client closed the connection');
    expect(admission.size('g')).toBe(1);
    release();
    admission.notify('g');
    await next;
    expect(pool.free()).toBe(0);
    expect(timers.count).toBe(0);
  });

  it('keeps groups apart', async () => {
    const admission = new AdmissionQueue({ timers: new ManualTimers() });
    const busy = slots(0);
    const idle = slots(1);
    void admission.acquire('busy', queue, busy.take).catch(() => undefined);
    await admission.acquire('idle', queue, idle.take);
    expect(admission.stats().queued).toEqual({ busy: 1 });
  });

  it('close refuses every waiter of every group at once, and every later request, free slot or not', async () => {
    const timers = new ManualTimers();
    const admission = new AdmissionQueue({ timers });
    const busy = slots(0);
    const first = admission.acquire('a', queue, busy.take);
    const second = admission.acquire('b', queue, busy.take);
    const retry = admission.acquire('a', queue, busy.take, undefined, true);
    const reason = new IopError('no_capacity', 'the edge is shutting down', { retryAfterSeconds: 1 });
    admission.close(reason);
    await expect(first).rejects.toBe(reason);
    await expect(second).rejects.toBe(reason);
    await expect(retry).rejects.toBe(reason);
    expect(admission.stats().queued).toEqual({});
    expect(timers.count).toBe(0);
    const free = slots(1);
    await expect(admission.acquire('c', queue, free.take)).rejects.toBe(reason);
    expect(free.free()).toBe(1);
  });
});
