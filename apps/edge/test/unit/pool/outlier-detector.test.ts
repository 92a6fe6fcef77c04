import { OutlierDetector, type AttemptOutcome, type OutlierConfig } from '../../../src/pool/outlier-detector.js';
import { ManualClock } from './fixtures.js';

const config: OutlierConfig = {
  consecutiveFailures: 5,
  baseEjectionMs: 10_000,
  maxEjectionMs: 300_000,
  maxEjectedPercent: 50,
};

function setup(members = ['a', 'b', 'c', 'd']) {
  const clock = new ManualClock();
  const events: Array<[string, string, string]> = [];
  const detector = new OutlierDetector(config, {
    now: clock.now,
    onChange: (id, state, reason) => events.push([id, state, reason]),
  });
  for (const id of members) detector.add(id);
  const attempt = (id: string, outcome: AttemptOutcome) => detector.onResult(detector.onStart(id), outcome);
  return { clock, events, detector, attempt };
}

describe('OutlierDetector', () => {
  it('ejects after 5 consecutive server-side failures, not after 4', () => {
    const { detector, attempt, events, clock } = setup();
    for (let i = 0; i < 4; i++) attempt('a', 'server_error');
    expect(detector.allows('a')).toBe(true);
    attempt('a', 'timeout');
    expect(detector.allows('a')).toBe(false);
    expect(detector.state('a')).toBe('ejected');
    expect(events).toEqual([
      ['a', 'ejected', '5 consecutive failures, last: timeout; ejected for 10000 ms (ejection 1)'],
    ]);
    expect(detector.snapshot().find((s) => s.providerId === 'a')).toEqual({
      providerId: 'a',
      state: 'ejected',
      consecutiveFailures: 0,
      ejections: 1,
      ejectedUntil: clock.ms + 10_000,
      reason: events[0]![2],
    });
  });

  it('does not count 4xx (or 429) as failures, and a success resets the run', () => {
    const { detector, attempt } = setup();
    for (let i = 0; i < 20; i++) attempt('a', 'client_error');
    for (let i = 0; i < 4; i++) attempt('a', 'connect_failure');
    attempt('a', 'success');
    for (let i = 0; i < 4; i++) attempt('a', 'connect_failure');
    attempt('a', 'client_error');
    for (let i = 0; i < 4; i++) attempt('a', 'server_error');
    expect(detector.state('a')).toBe('healthy');
  });

  it('lets one probe through after the ejection time; success makes the provider healthy', () => {
    const { detector, attempt, clock, events } = setup();
    for (let i = 0; i < 5; i++) attempt('a', 'server_error');
    clock.advance(9_999);
    expect(detector.allows('a')).toBe(false);
    clock.advance(1);
    expect(detector.allows('a')).toBe(true);
    const probe = detector.onStart('a');
    expect(probe.probe).toBe(true);
    expect(detector.state('a')).toBe('probing');
    expect(detector.allows('a')).toBe(false); // one probe at a time
    detector.onResult(probe, 'success');
    expect(detector.state('a')).toBe('healthy');
    expect(detector.allows('a')).toBe(true);
    expect(events.map(([, state]) => state)).toEqual(['ejected', 'probing', 'healthy']);
  });

  it('ejects again for base × n after a failed probe, capped at maxEjectionMs', () => {
    const { detector, attempt, clock } = setup();
    for (let i = 0; i < 5; i++) attempt('a', 'server_error');
    const durations: number[] = [];
    for (let n = 0; n < 40; n++) {
      const until = detector.snapshot().find((s) => s.providerId === 'a')!.ejectedUntil!;
      durations.push(until - clock.ms);
      clock.ms = until;
      attempt('a', 'connect_failure'); // the probe fails
    }
    expect(durations.slice(0, 4)).toEqual([10_000, 20_000, 30_000, 40_000]);
    expect(durations[29]).toBe(300_000);
    expect(durations[39]).toBe(300_000);
  });

  it('starts again from the base time once healthy for maxEjectionMs', () => {
    const { detector, attempt, clock } = setup();
    const ejectFor = () => {
      for (let i = 0; i < 5; i++) attempt('a', 'server_error');
      return detector.snapshot().find((s) => s.providerId === 'a')!.ejectedUntil! - clock.ms;
    };
    expect(ejectFor()).toBe(10_000);
    clock.advance(10_000);
    attempt('a', 'success');
    expect(ejectFor()).toBe(20_000); // soon after recovering: longer
    clock.advance(20_000);
    attempt('a', 'success');
    clock.advance(300_000);
    expect(ejectFor()).toBe(10_000);
  });

  it('ignores results of requests started before the ejection, and a cancelled probe frees the slot', () => {
    const { detector, attempt, clock } = setup();
    const old = detector.onStart('a');
    for (let i = 0; i < 5; i++) attempt('a', 'server_error');
    detector.onResult(old, 'success');
    expect(detector.state('a')).toBe('ejected');
    clock.advance(10_000);
    const probe = detector.onStart('a');
    detector.onResult(probe, 'cancelled');
    expect(detector.state('a')).toBe('ejected');
    expect(detector.allows('a')).toBe(true);
    expect(detector.onStart('a').probe).toBe(true);
  });

  it('never ejects more than maxEjectedPercent of the group', () => {
    const { detector, attempt } = setup(['a', 'b', 'c', 'd']);
    for (const id of ['a', 'b', 'c', 'd']) for (let i = 0; i < 5; i++) attempt(id, 'server_error');
    expect(
      detector
        .snapshot()
        .filter((s) => s.state === 'ejected')
        .map((s) => s.providerId),
    ).toEqual(['a', 'b']);
    expect(detector.allows('c')).toBe(true);
    detector.remove('a');
    attempt('c', 'server_error'); // 3 members: ⌊1.5⌋ = 1 out, b is already out
    expect(detector.state('c')).toBe('healthy');
  });

  it('never ejects the only provider of a group at 50 %', () => {
    const { detector, attempt } = setup(['solo']);
    for (let i = 0; i < 50; i++) attempt('solo', 'server_error');
    expect(detector.allows('solo')).toBe(true);
  });
});
