import fc from 'fast-check';
import { P2cPicker, RoundRobinPicker, loadScore } from '../../../src/pool/p2c.js';
import { provider, seededRandom } from './fixtures.js';

describe('loadScore', () => {
  it('is (inFlight + queued) / maxConcurrency plus kvCacheUsage², divided by weight', () => {
    expect(loadScore(provider('a', { inFlight: 3, load: { queued: 1 }, maxConcurrency: 8 }))).toBe(0.5);
    expect(loadScore(provider('a', { inFlight: 4, maxConcurrency: 8, load: { queued: 0, kvCacheUsage: 0.5 } }))).toBe(
      0.75,
    );
    expect(loadScore(provider('a', { inFlight: 4, maxConcurrency: 8, weight: 2, load: { queued: 0 } }))).toBe(0.25);
  });
});

describe('P2cPicker', () => {
  it('always prefers the less loaded of two providers', () => {
    const picker = new P2cPicker({ random: seededRandom(1) });
    const busy = provider('busy', { inFlight: 8 });
    const idle = provider('idle', { inFlight: 1 });
    for (let i = 0; i < 200; i++) expect(picker.pick([busy, idle])).toBe(idle);
  });

  it('never picks the most loaded of three (it loses every comparison)', () => {
    const picker = new P2cPicker({ random: seededRandom(2) });
    const providers = [provider('a', { inFlight: 1 }), provider('b', { inFlight: 2 }), provider('c', { inFlight: 9 })];
    const counts = new Map<string, number>();
    for (let i = 0; i < 3000; i++) {
      const chosen = picker.pick(providers)!;
      counts.set(chosen.id, (counts.get(chosen.id) ?? 0) + 1);
    }
    expect(counts.get('c')).toBeUndefined();
    // a wins both pairs it is in (2 of 3 pairs), b only the pair {b, c}.
    expect(counts.get('a')! / 3000).toBeCloseTo(2 / 3, 1);
    expect(counts.get('b')! / 3000).toBeCloseTo(1 / 3, 1);
  });

  it('avoids a provider whose KV cache is nearly full at equal in-flight', () => {
    const picker = new P2cPicker({ random: seededRandom(3) });
    const full = provider('full', { inFlight: 2, load: { queued: 0, kvCacheUsage: 0.95 } });
    const roomy = provider('roomy', { inFlight: 2, load: { queued: 0, kvCacheUsage: 0.1 } });
    for (let i = 0; i < 50; i++) expect(picker.pick([full, roomy])).toBe(roomy);
  });

  it('gives a weight-2 provider about twice the traffic when load is tracked', () => {
    const picker = new P2cPicker({ random: seededRandom(4) });
    const big = provider('big', { weight: 2, maxConcurrency: 1000 });
    const small = provider('small', { maxConcurrency: 1000 });
    for (let i = 0; i < 900; i++) picker.pick([big, small])!.inFlight++;
    expect(big.inFlight).toBeGreaterThanOrEqual(598);
    expect(big.inFlight).toBeLessThanOrEqual(602);
  });

  it('spreads load evenly: after 1000 picks over 10 providers the spread is at most 2', () => {
    const picker = new P2cPicker({ random: seededRandom(5) });
    const providers = Array.from({ length: 10 }, (_, i) => provider(`p${i}`, { maxConcurrency: 1000 }));
    for (let i = 0; i < 1000; i++) picker.pick(providers)!.inFlight++;
    const loads = providers.map((p) => p.inFlight);
    expect(Math.max(...loads) - Math.min(...loads)).toBeLessThanOrEqual(2);
    expect(loads.reduce((sum, value) => sum + value, 0)).toBe(1000);
  });

  it('breaks ties at random so equal providers share the traffic', () => {
    const picker = new P2cPicker({ random: seededRandom(6) });
    const a = provider('a');
    const b = provider('b');
    let aCount = 0;
    for (let i = 0; i < 2000; i++) if (picker.pick([a, b]) === a) aCount++;
    expect(aCount / 2000).toBeGreaterThan(0.45);
    expect(aCount / 2000).toBeLessThan(0.55);
  });

  it('skips unavailable, excluded, unlabelled and disallowed providers', () => {
    const picker = new P2cPicker({ random: seededRandom(7) });
    const full = provider('full', { inFlight: 10 });
    const closed = provider('closed', { closed: true });
    const tried = provider('tried');
    const cpu = provider('cpu', { labels: { accel: 'cpu' } });
    const ejected = provider('ejected', { labels: { accel: 'gpu' } });
    const gpu = provider('gpu', { labels: { accel: 'gpu', zone: 'a' }, inFlight: 9 });
    const all = [full, closed, tried, cpu, ejected, gpu];
    const options = {
      exclude: new Set(['tried']),
      requireLabels: { accel: 'gpu' },
      allow: (p: { id: string }) => p.id !== 'ejected',
    };
    for (let i = 0; i < 20; i++) expect(picker.pick(all, options)).toBe(gpu);
    expect(picker.pick(all, { ...options, requireLabels: { accel: 'tpu' } })).toBeUndefined();
    expect(picker.pick([])).toBeUndefined();
  });

  it('property: the pick is eligible and never strictly worse than every other eligible provider', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ inFlight: fc.nat(20), queued: fc.nat(5), up: fc.boolean() }), {
          minLength: 1,
          maxLength: 12,
        }),
        fc.integer(),
        (specs, seed) => {
          const providers = specs.map((spec, i) =>
            provider(`p${i}`, {
              maxConcurrency: 16,
              inFlight: spec.inFlight,
              load: { queued: spec.queued },
              closed: !spec.up,
            }),
          );
          const chosen = new P2cPicker({ random: seededRandom(seed) }).pick(providers);
          const eligible = providers.filter((p) => p.available);
          if (eligible.length === 0) return chosen === undefined;
          if (chosen === undefined || !chosen.available) return false;
          return eligible.length === 1 || eligible.some((p) => p !== chosen && loadScore(p) >= loadScore(chosen));
        },
      ),
    );
  });
});

describe('RoundRobinPicker', () => {
  it('takes the eligible providers in turn, skipping the ineligible ones', () => {
    const picker = new RoundRobinPicker();
    const pool = ['a', 'b', 'c'].map((id) => provider(id));
    expect([1, 2, 3, 4].map(() => picker.pick(pool)!.id)).toEqual(['a', 'b', 'c', 'a']);
    expect([1, 2].map(() => picker.pick(pool, { exclude: new Set(['b']) })!.id)).toEqual(['a', 'c']);
    expect(picker.pick(pool, { exclude: new Set(['a', 'b', 'c']) })).toBeUndefined();
  });
});
