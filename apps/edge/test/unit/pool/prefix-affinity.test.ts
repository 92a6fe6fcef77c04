import fc from 'fast-check';
import type { InferenceRequest, Message } from '@iop/core';
import { PrefixAffinity, affinityKey, hashString } from '../../../src/pool/prefix-affinity.js';
import { provider } from './fixtures.js';

const system: Message = { role: 'system', content: [{ type: 'text', text: 'You are a coding agent.' }] };
const user = (text: string): Message => ({ role: 'user', content: [{ type: 'text', text }] });
const assistant = (text: string): Message => ({ role: 'assistant', content: [{ type: 'text', text }] });
const request = (messages: Message[], extra: Partial<InferenceRequest> = {}): InferenceRequest => ({
  model: 'm',
  messages,
  stream: true,
  ...extra,
});

describe('affinityKey', () => {
  it('gives every turn of one conversation the key of its system prompt and first user turn', () => {
    const turn1 = affinityKey(request([system, user('fix the bug')]), 2);
    const turn3 = affinityKey(request([system, user('fix the bug'), assistant('done'), user('now test it')]), 2);
    expect(turn3).toBe(turn1);
    // Without a system prompt the prefix stops before the first assistant turn.
    expect(affinityKey(request([user('hi'), assistant('hello'), user('more')]), 2)).toBe(
      affinityKey(request([user('hi')]), 2),
    );
  });

  it('separates different prefixes and different field boundaries', () => {
    const a = affinityKey(request([system, user('fix the bug')]), 2);
    expect(affinityKey(request([system, user('fix the bag')]), 2)).not.toBe(a);
    expect(affinityKey(request([user('ab'), user('c')]), 2)).not.toBe(affinityKey(request([user('a'), user('bc')]), 2));
    // prefixMessages = 1 keys on the system prompt alone.
    expect(affinityKey(request([system, user('x')]), 1)).toBe(affinityKey(request([system, user('y')]), 1));
  });

  it('uses prompt_cache_key when given, whatever the messages', () => {
    const key = affinityKey(request([user('a')], { promptCacheKey: 'session-42' }), 2);
    expect(affinityKey(request([user('b')], { promptCacheKey: 'session-42' }), 2)).toBe(key);
    expect(key).toBe(hashString('k:session-42'));
    expect(key).toBeGreaterThanOrEqual(0);
    expect(key).toBeLessThan(2 ** 32);
  });
});

describe('PrefixAffinity', () => {
  const providers = (n: number, prefix = 'gpu') =>
    Array.from({ length: n }, (_, i) => provider(`${prefix}-${i}`, { maxConcurrency: 1000 }));
  const keys = Array.from({ length: 10_000 }, (_, i) => hashString(`conversation-${i}`));

  it('sends the same key to the same provider, and splits keys about evenly', () => {
    const affinity = new PrefixAffinity();
    const pool = providers(5);
    const counts = new Map<string, number>();
    for (const key of keys) {
      const chosen = affinity.pick(key, pool)!;
      expect(affinity.pick(key, pool)).toBe(chosen);
      counts.set(chosen.id, (counts.get(chosen.id) ?? 0) + 1);
    }
    for (const count of counts.values()) {
      expect(count).toBeGreaterThan(1500);
      expect(count).toBeLessThan(2500);
    }
  });

  it('moves about 1/N of the keys when a provider joins, all of them to the newcomer', () => {
    const affinity = new PrefixAffinity();
    const pool = providers(10);
    const before = keys.map((key) => affinity.pick(key, pool)!.id);
    const grown = [...pool, provider('gpu-new', { maxConcurrency: 1000 })];
    const after = keys.map((key) => affinity.pick(key, grown)!.id);
    let moved = 0;
    after.forEach((id, i) => {
      if (id !== before[i]) {
        moved++;
        expect(id).toBe('gpu-new');
      }
    });
    // Ideal: 1/11 ≈ 9.1 %.
    expect(moved / keys.length).toBeGreaterThan(0.05);
    expect(moved / keys.length).toBeLessThan(0.13);
  });

  it('skips an unavailable provider without reshuffling the other keys', () => {
    const affinity = new PrefixAffinity();
    const pool = providers(4);
    const before = keys.slice(0, 2000).map((key) => affinity.pick(key, pool)!.id);
    pool[0]!.closed = true;
    keys.slice(0, 2000).forEach((key, i) => {
      const id = affinity.pick(key, pool)!.id;
      if (before[i] !== 'gpu-0') expect(id).toBe(before[i]);
      else expect(id).not.toBe('gpu-0');
    });
  });

  it('keeps a hot key within loadFactor × average load, spilling clockwise', () => {
    const affinity = new PrefixAffinity({ loadFactor: 1.25 });
    const pool = providers(4);
    const hot = hashString('the one system prompt everyone shares');
    const home = affinity.pick(hot, pool)!;
    for (let placed = 1; placed <= 400; placed++) {
      affinity.pick(hot, pool)!.inFlight++;
      const bound = Math.ceil((1.25 * placed) / pool.length);
      for (const p of pool) expect(p.inFlight).toBeLessThanOrEqual(bound);
    }
    expect(home.inFlight).toBe(125);
    expect(pool.reduce((sum, p) => sum + p.inFlight, 0)).toBe(400);
  });

  it('keeps a session where it was last served, also after it spilled, while that provider is within the bound', () => {
    const affinity = new PrefixAffinity({ loadFactor: 1.25 });
    const pool = Array.from({ length: 4 }, (_, i) => provider(`gpu-${i}`, { maxConcurrency: 8 }));
    const session = hashString('system prompt + the session first user turn');
    const home = affinity.pick(session, pool)!;
    home.inFlight = 8; // the home agent is over its bound: the session spills
    const spill = affinity.pick(session, pool)!;
    expect(spill).not.toBe(home);
    affinity.observe(session, spill.id);
    home.inFlight = 0; // home is free again: the session stays with its history on the spill target
    for (let turn = 0; turn < 5; turn++) expect(affinity.pick(session, pool)).toBe(spill);
    // Once the spill target itself is over the bound, the ring decides again.
    spill.inFlight = 8;
    expect(affinity.pick(session, pool)).toBe(home);
    // A provider it was last served by that is no longer a candidate is not picked.
    affinity.observe(session, 'gone');
    spill.inFlight = 0;
    expect(affinity.pick(session, pool)).toBe(home);
  });

  it('honours exclude and labels, and returns undefined when nothing is eligible', () => {
    const affinity = new PrefixAffinity();
    const pool = [provider('a', { labels: { accel: 'gpu' } }), provider('b', { labels: { accel: 'cpu' } })];
    for (const key of keys.slice(0, 100))
      expect(affinity.pick(key, pool, { requireLabels: { accel: 'gpu' } })!.id).toBe('a');
    expect(affinity.pick(keys[0]!, pool, { exclude: new Set(['a', 'b']) })).toBeUndefined();
    expect(affinity.pick(keys[0]!, [])).toBeUndefined();
  });

  it('counts warm and cold hits with a bounded memory of keys', () => {
    const affinity = new PrefixAffinity({ maxTrackedKeys: 2 });
    expect(affinity.observe(1, 'a')).toBe('new');
    expect(affinity.observe(1, 'a')).toBe('warm');
    expect(affinity.observe(1, 'b')).toBe('cold');
    expect(affinity.observe(2, 'a')).toBe('new');
    expect(affinity.observe(3, 'a')).toBe('new'); // forgets key 1, the least recently seen
    expect(affinity.observe(1, 'b')).toBe('new');
    affinity.recordHit(true);
    expect(affinity.stats()).toEqual({ warm: 2, cold: 1, warmShare: 2 / 3 });
  });

  it('property: removing a provider only moves the keys it owned', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.string({ minLength: 1, maxLength: 8 }), { minLength: 2, maxLength: 8 }),
        fc.array(fc.integer({ min: 0, max: 2 ** 32 - 1 }), { minLength: 1, maxLength: 50 }),
        fc.nat(),
        (ids, sample, victim) => {
          const full = ids.map((id) => provider(id, { maxConcurrency: 1000 }));
          const removed = full[victim % full.length]!;
          const rest = full.filter((p) => p !== removed);
          const affinity = new PrefixAffinity({ virtualNodes: 20 });
          return sample.every((key) => {
            const before = affinity.pick(key, full)!;
            const after = affinity.pick(key, rest)!;
            return before === removed || after === before;
          });
        },
      ),
    );
  });

  it('property: no provider exceeds the bound, whatever the keys', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 2, max: 6 }),
        fc.array(fc.integer({ min: 0, max: 7 }), { minLength: 1, maxLength: 200 }),
        (n, keyIndexes) => {
          const pool = providers(n);
          const affinity = new PrefixAffinity({ loadFactor: 1.5 });
          return keyIndexes.every((k, i) => {
            affinity.pick(keys[k]!, pool)!.inFlight++;
            const bound = Math.ceil((1.5 * (i + 1)) / n);
            return pool.every((p) => p.inFlight <= bound);
          });
        },
      ),
    );
  });
});
