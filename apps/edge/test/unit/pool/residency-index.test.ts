import fc from 'fast-check';
import { ResidencyIndex, type ReportedResidency } from '../../../src/pool/residency-index.js';

/** Every (session, key) entry of an index, from its per-key view, sorted: the state two indexes are compared by. */
function state(index: ResidencyIndex, sessions: readonly string[], keys: readonly number[]): string[] {
  const entries: string[] = [];
  for (const key of keys) {
    const holders = index.holders(key);
    for (const session of sessions) {
      const viaKey = holders?.get(session) ?? 0;
      expect(index.cachedTokens(session, key)).toBe(viaKey); // both views agree
      if (viaKey > 0) entries.push(`${session}:${key}:${viaKey}`);
    }
  }
  return entries.sort();
}

const KEYS = [1, 2, 3, 4, 5, 6, 7, 8];
const SESSIONS = ['ses_a', 'ses_b', 'ses_c'];

const reportArb: fc.Arbitrary<ReportedResidency> = fc.record({
  reset: fc.boolean(),
  prefixes: fc.array(
    fc.record({
      key: fc.constantFrom(...KEYS),
      cachedTokens: fc.oneof(fc.constant(0), fc.integer({ min: 16, max: 40_000 })),
    }),
    {
      maxLength: 6,
    },
  ),
});

describe('ResidencyIndex', () => {
  it('keeps what each session reported, per key and per session', () => {
    const index = new ResidencyIndex();
    expect(index.empty).toBe(true);
    expect(
      index.apply('ses_a', {
        reset: false,
        prefixes: [
          { key: 10n, cachedTokens: 4096 },
          { key: 11n, cachedTokens: 160 },
        ],
      }),
    ).toBeUndefined();
    expect(index.apply('ses_b', { reset: false, prefixes: [{ key: 10n, cachedTokens: 1024 }] })).toBeUndefined();
    expect([...index.holders(10)!]).toEqual([
      ['ses_a', 4096],
      ['ses_b', 1024],
    ]);
    // 0 = gone; an update replaces
    index.apply('ses_a', {
      reset: false,
      prefixes: [
        { key: 10n, cachedTokens: 0 },
        { key: 11n, cachedTokens: 320 },
      ],
    });
    expect([...index.holders(10)!]).toEqual([['ses_b', 1024]]);
    expect(index.cachedTokens('ses_a', 11)).toBe(320);
    // reset forgets that session's keys only
    index.apply('ses_a', { reset: true, prefixes: [] });
    expect(index.sizeOf('ses_a')).toBe(0);
    expect(index.cachedTokens('ses_b', 10)).toBe(1024);
    index.forget('ses_b');
    expect(index.empty).toBe(true);
    expect(index.holders(10)).toBeUndefined();
  });

  it('refuses a malformed or oversized report whole, with a reason, and counts it', () => {
    const refused: string[] = [];
    const index = new ResidencyIndex({
      maxPrefixesPerReport: 4,
      maxCachedTokens: 1_000_000,
      onRefused: (reason) => refused.push(reason),
    });
    index.apply('ses_a', { reset: false, prefixes: [{ key: 1n, cachedTokens: 16 }] });
    const tooMany = index.apply('ses_a', {
      reset: true,
      prefixes: Array.from({ length: 5 }, (_, i) => ({ key: BigInt(i + 2), cachedTokens: 16 })),
    });
    expect(tooMany).toEqual({ reason: 'too_many_prefixes', detail: '5 prefixes in one report, at most 4' });
    expect(index.apply('ses_a', { reset: true, prefixes: [{ key: 2n ** 53n, cachedTokens: 16 }] })?.reason).toBe(
      'bad_key',
    );
    expect(index.apply('ses_a', { reset: true, prefixes: [{ key: 2n, cachedTokens: 1_000_001 }] })?.reason).toBe(
      'absurd_tokens',
    );
    expect(index.apply('ses_a', { reset: true, prefixes: [{ key: 2n, cachedTokens: 1.5 }] })?.reason).toBe(
      'absurd_tokens',
    );
    expect(refused).toEqual(['too_many_prefixes', 'bad_key', 'absurd_tokens', 'absurd_tokens']);
    // nothing of a refused report was applied, not even its reset
    expect(index.cachedTokens('ses_a', 1)).toBe(16);
    expect(index.sizeOf('ses_a')).toBe(1);
  });

  it('keeps at most maxKeysPerHolder keys per session, the least recently reported going first', () => {
    const index = new ResidencyIndex({ maxKeysPerHolder: 3 });
    index.apply('ses_a', { reset: false, prefixes: [1, 2, 3].map((key) => ({ key: BigInt(key), cachedTokens: 16 })) });
    index.apply('ses_a', { reset: false, prefixes: [{ key: 1n, cachedTokens: 32 }] }); // 1 is recent again
    index.apply('ses_a', { reset: false, prefixes: [{ key: 4n, cachedTokens: 16 }] });
    expect(index.sizeOf('ses_a')).toBe(3);
    expect(index.holders(2)).toBeUndefined();
    expect(index.cachedTokens('ses_a', 1)).toBe(32);
    expect(index.cachedTokens('ses_a', 4)).toBe(16);
  });

  it('any interleaving of different sessions’ reports gives the same state, and the bounds hold', () => {
    const bound = 5;
    fc.assert(
      fc.property(
        fc.array(fc.record({ session: fc.constantFrom(...SESSIONS), report: reportArb }), { maxLength: 40 }),
        fc.array(fc.nat(), { maxLength: 40 }),
        (messages, shuffle) => {
          const inOrder = new ResidencyIndex({ maxKeysPerHolder: bound });
          for (const { session, report } of messages) inOrder.apply(session, report);
          // Another interleaving: each session's own reports stay in their order (one Control stream each).
          const queues = new Map(SESSIONS.map((session) => [session, messages.filter((m) => m.session === session)]));
          const interleaved = new ResidencyIndex({ maxKeysPerHolder: bound });
          let step = 0;
          for (;;) {
            const open = SESSIONS.filter((session) => queues.get(session)!.length > 0);
            if (open.length === 0) break;
            const session = open[(shuffle[step++ % Math.max(1, shuffle.length)] ?? 0) % open.length]!;
            interleaved.apply(session, queues.get(session)!.shift()!.report);
          }
          expect(state(interleaved, SESSIONS, KEYS)).toEqual(state(inOrder, SESSIONS, KEYS));
          for (const session of SESSIONS) expect(inOrder.sizeOf(session)).toBeLessThanOrEqual(bound);
          // Forgetting a session leaves the others exactly as they were.
          const before = state(inOrder, SESSIONS.slice(1), KEYS);
          inOrder.forget(SESSIONS[0]!);
          expect(state(inOrder, SESSIONS, KEYS)).toEqual(before);
        },
      ),
    );
  });
});
