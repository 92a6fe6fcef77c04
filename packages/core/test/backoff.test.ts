import { backoffDelayMs, sleep } from '../src/backoff.js';

describe('backoffDelayMs', () => {
  test('full jitter: uniform below a ceiling that doubles up to the cap', () => {
    const at = (attempt: number, random: number) =>
      backoffDelayMs(attempt, { baseMs: 100, capMs: 1_000, random: () => random });
    expect([0, 1, 2, 3, 4, 40].map((attempt) => at(attempt, 0.999_999))).toEqual([99, 199, 399, 799, 999, 999]);
    expect(at(3, 0)).toBe(0);
  });

  test('equal jitter never goes below half the ceiling', () => {
    expect(backoffDelayMs(2, { baseMs: 100, capMs: 1_000, jitter: 'equal', random: () => 0 })).toBe(200);
    expect(backoffDelayMs(2, { baseMs: 100, capMs: 1_000, jitter: 'equal', random: () => 0.5 })).toBe(300);
  });
});

describe('sleep', () => {
  test('resolves after the time, or early when the signal aborts', async () => {
    const started = Date.now();
    await sleep(30);
    expect(Date.now() - started).toBeGreaterThanOrEqual(25);
    const controller = new AbortController();
    const waiting = sleep(60_000, controller.signal);
    controller.abort();
    await waiting;
    await sleep(60_000, AbortSignal.abort());
  });
});
