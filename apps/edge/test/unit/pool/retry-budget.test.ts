import fc from 'fast-check';
import { RetryBudget } from '../../../src/pool/retry-budget.js';
import { ManualClock } from './fixtures.js';

describe('RetryBudget', () => {
  it('allows budgetRatio × requests + the per-second reserve over the window', () => {
    const clock = new ManualClock(0);
    const budget = new RetryBudget({ budgetRatio: 0.2, minRetriesPerSecond: 1, windowMs: 10_000 }, { now: clock.now });
    for (let i = 0; i < 100; i++) budget.onRequest();
    let granted = 0;
    while (budget.tryRetry()) granted++;
    expect(granted).toBe(30); // 0.2 × 100 + 1 × 10 s
    expect(budget.snapshot()).toEqual({ requests: 100, retries: 30, available: 0 });
    clock.advance(10_000); // the window slid past all of it
    expect(budget.snapshot()).toEqual({ requests: 0, retries: 0, available: 10 });
  });

  it('caps retries under a 100 % failure rate: 100 requests/s for 60 s, 3 attempts each', () => {
    const clock = new ManualClock(0);
    const budget = new RetryBudget({ budgetRatio: 0.2, minRetriesPerSecond: 5 }, { now: clock.now });
    let requests = 0;
    let retries = 0;
    for (let ms = 0; ms < 60_000; ms += 10) {
      clock.ms = ms;
      budget.onRequest();
      requests++;
      for (let attempt = 2; attempt <= 3; attempt++) if (budget.tryRetry()) retries++;
    }
    expect(requests).toBe(6000);
    // Without a budget: 12 000 retries (3× the load on a failing pool). With it: 20 % of the
    // requests plus 5/s, i.e. 1 200 + 300, and the pool sees 1.25× the client traffic.
    expect(retries).toBeGreaterThanOrEqual(1450);
    expect(retries).toBeLessThanOrEqual(1500);
  });

  it('property: retries in any window never exceed the budget', () => {
    fc.assert(
      fc.property(fc.array(fc.record({ gapMs: fc.nat(3_000), retry: fc.boolean() }), { maxLength: 300 }), (ops) => {
        const clock = new ManualClock(0);
        const budget = new RetryBudget(
          { budgetRatio: 0.1, minRetriesPerSecond: 0.5, windowMs: 10_000 },
          { now: clock.now },
        );
        const log: Array<{ bucket: number; retry: boolean }> = [];
        for (const op of ops) {
          clock.advance(op.gapMs);
          const bucket = Math.floor(clock.ms / 1_000);
          if (!op.retry) {
            budget.onRequest();
            log.push({ bucket, retry: false });
          } else if (budget.tryRetry()) {
            log.push({ bucket, retry: true });
            const inWindow = log.filter((entry) => entry.bucket > bucket - 10);
            const requests = inWindow.filter((entry) => !entry.retry).length;
            const retries = inWindow.length - requests;
            if (retries > 0.1 * requests + 5) return false;
          }
        }
        return true;
      }),
    );
  });
});
