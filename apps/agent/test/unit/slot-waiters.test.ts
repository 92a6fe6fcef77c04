import { SlotWaiters } from '../../src/slot-waiters.js';

describe('SlotWaiters', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  const held = (runId: string, log: string[]) => ({
    runId,
    start: () => log.push(`start ${runId}`),
    reject: () => log.push(`reject ${runId}`),
  });

  it('starts held assignments first in, first out as slots free, and refuses past maxHeld', () => {
    const log: string[] = [];
    const waiters = new SlotWaiters(() => 2, 5_000);
    expect(waiters.hold(held('a', log))).toBe(true);
    expect(waiters.hold(held('b', log))).toBe(true);
    expect(waiters.hold(held('c', log))).toBe(false);
    waiters.release();
    waiters.release();
    waiters.release(); // nothing left: no-op
    expect(log).toEqual(['start a', 'start b']);
    expect(waiters.size).toBe(0);
  });

  it('rejects an assignment that waited maxWaitMs, and drops a cancelled one silently', () => {
    const log: string[] = [];
    const waiters = new SlotWaiters(() => 4, 5_000);
    waiters.hold(held('a', log));
    waiters.hold(held('b', log));
    expect(waiters.remove('b')).toBe(true);
    expect(waiters.remove('b')).toBe(false);
    jest.advanceTimersByTime(4_999);
    expect(log).toEqual([]);
    jest.advanceTimersByTime(1);
    expect(log).toEqual(['reject a']);
    waiters.release();
    expect(log).toEqual(['reject a']);
  });

  it('rejects every held assignment on rejectAll (drain)', () => {
    const log: string[] = [];
    const waiters = new SlotWaiters(() => 4);
    waiters.hold(held('a', log));
    waiters.hold(held('b', log));
    waiters.rejectAll();
    jest.advanceTimersByTime(10_000);
    expect(log).toEqual(['reject a', 'reject b']);
  });
});
