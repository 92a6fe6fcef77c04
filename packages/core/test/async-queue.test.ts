import { AsyncQueue } from '../src/async-queue.js';

describe('AsyncQueue', () => {
  it('delivers values in order and ends after close', async () => {
    const queue = new AsyncQueue<number>(4);
    queue.push(1);
    queue.push(2);
    queue.close();
    const seen: number[] = [];
    for await (const value of queue) seen.push(value);
    expect(seen).toEqual([1, 2]);
  });

  it('makes the producer wait once highWaterMark values are queued, and releases it as the consumer catches up', async () => {
    const queue = new AsyncQueue<number>(2);
    expect(queue.push(1)).toBeUndefined();
    const blocked = queue.push(2);
    expect(blocked).toBeInstanceOf(Promise);
    let released = false;
    void blocked!.then(() => (released = true));
    await Promise.resolve();
    expect(released).toBe(false);
    await queue.next();
    await queue.next();
    await new Promise((resolve) => setImmediate(resolve));
    expect(released).toBe(true);
  });

  it('hands a value straight to a waiting consumer and rejects it after fail()', async () => {
    const queue = new AsyncQueue<string>(1);
    const next = queue.next();
    queue.push('a');
    expect(await next).toEqual({ value: 'a', done: false });
    const pending = queue.next();
    queue.fail(new Error('gone'));
    await expect(pending).rejects.toThrow('gone');
  });
});
