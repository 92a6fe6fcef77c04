import { chatPrefixKeys, keysToMap, MAX_PREFIX_KEYS, prefixKeys } from '../../../src/pool/prefix-keys.js';
import { ResidencyIndex } from '../../../src/pool/residency-index.js';
import { pickResident, type ResidentCandidate } from '../../../src/pool/resident-pick.js';
import type { InferenceRequest } from '@iop/core';

function agent(
  id: string,
  inFlight = 0,
  maxConcurrency = 8,
  available = true,
): ResidentCandidate & { inFlight: number } {
  return {
    id,
    sessionId: `ses_${id}`,
    maxConcurrency,
    inFlight,
    weight: 1,
    labels: {},
    load: { queued: 0 },
    available,
  };
}

const chat = (...texts: string[]) => ({
  model: 'm',
  messages: texts.map((content, i) => ({ role: i === 0 ? 'system' : i % 2 === 1 ? 'user' : 'assistant', content })),
});

describe('prefix keys', () => {
  it('chains a 53-bit key at each message boundary, so turn k+1 repeats turn k’s whole-prompt key', () => {
    const turn1 = chatPrefixKeys(chat('sys', 'hello'))!;
    const turn2 = chatPrefixKeys(chat('sys', 'hello', 'hi there', 'how are you'))!;
    expect(turn1.messages).toEqual([1, 2]);
    expect(turn2.messages).toEqual([1, 2, 3, 4]);
    expect(turn2.keys.slice(0, 2)).toEqual(turn1.keys);
    for (const key of turn2.keys) expect(Number.isSafeInteger(key) && key >= 0).toBe(true);
    expect(new Set(turn2.keys).size).toBe(4);
    expect(chatPrefixKeys(chat('sys', 'hellO'))!.keys[1]).not.toBe(turn1.keys[1]);
    // the agent maps the system message's key and the whole prompt's
    expect(keysToMap(turn2)).toEqual([
      { key: turn2.keys[0], messages: 1 },
      { key: turn2.keys[3], messages: 0 },
    ]);
    expect(
      keysToMap(
        chatPrefixKeys({
          messages: [
            { role: 'user', content: 'a' },
            { role: 'assistant', content: 'b' },
          ],
        })!,
      ),
    ).toEqual([{ key: expect.any(Number), messages: 0 }]);
  });

  it('gives the same keys on the hub path as on the passthrough path for a text conversation', () => {
    const request = {
      model: 'm',
      stream: false,
      messages: [
        { role: 'system', content: [{ type: 'text', text: 'sys' }] },
        { role: 'user', content: [{ type: 'text', text: 'hello' }] },
      ],
    } as unknown as InferenceRequest;
    expect(prefixKeys(request)!.keys).toEqual(chatPrefixKeys(chat('sys', 'hello'))!.keys);
  });

  it('keeps the first key and the last ones when a conversation is longer than the cap', () => {
    const texts = Array.from({ length: 100 }, (_, i) => `m${i}`);
    const keys = chatPrefixKeys(chat(...texts))!;
    expect(keys.keys).toHaveLength(MAX_PREFIX_KEYS);
    expect(keys.messages[0]).toBe(1);
    expect(keys.messages[1]).toBe(100 - MAX_PREFIX_KEYS + 2);
    expect(keys.messages[MAX_PREFIX_KEYS - 1]).toBe(100);
    expect(keys.keys[MAX_PREFIX_KEYS - 1]).toBe(chatPrefixKeys(chat(...texts))!.keys[MAX_PREFIX_KEYS - 1]);
    expect(chatPrefixKeys({ messages: [] })).toBeUndefined();
  });
});

describe('pickResident', () => {
  const turn2 = chatPrefixKeys(chat('sys', 'hello', 'hi', 'more'))!;
  const [system, , , whole] = turn2.keys as [number, number, number, number];
  const turn1Whole = turn2.keys[1]!;

  it('picks the candidate holding the longest prefix, by cached tokens', () => {
    const index = new ResidencyIndex();
    const [a, b, c] = [agent('a'), agent('b'), agent('c')];
    index.apply('ses_a', { reset: false, prefixes: [{ key: BigInt(system), cachedTokens: 2048 }] });
    index.apply('ses_b', { reset: false, prefixes: [{ key: BigInt(turn1Whole), cachedTokens: 4096 }] });
    expect(pickResident(turn2, [a, b, c], index, 1.25)).toEqual({ provider: b, cachedTokens: 4096 });
    // the longest key held decides a candidate's score
    index.apply('ses_c', { reset: false, prefixes: [{ key: BigInt(whole), cachedTokens: 6000 }] });
    expect(pickResident(turn2, [a, b, c], index, 1.25)?.provider).toBe(c);
  });

  it('ties go to the lower load; a candidate over the bound or not eligible is never chosen', () => {
    const index = new ResidencyIndex();
    const a = agent('a', 3);
    const b = agent('b', 1);
    const idle = agent('idle', 0);
    for (const session of ['ses_a', 'ses_b'])
      index.apply(session, { reset: false, prefixes: [{ key: BigInt(system), cachedTokens: 512 }] });
    expect(pickResident(turn2, [a, b, idle], index, 3)?.provider).toBe(b);
    // both over the bound: L = 8 busy across 3 × 8 slots, bound ⌈1.25 × 9 × 8 / 24⌉ = 4
    b.inFlight = 4;
    a.inFlight = 4;
    expect(pickResident(turn2, [a, b, idle], index, 1.25)).toBeUndefined();
    b.inFlight = 1;
    expect(pickResident(turn2, [a, { ...b, available: false }, idle], index, 3)?.provider).toBe(a);
    expect(pickResident(turn2, [a, b, idle], index, 3, { exclude: new Set(['b']) })?.provider).toBe(a);
    // ejected by the outlier detector (`allow`), whatever it reported
    expect(pickResident(turn2, [a, b, idle], index, 3, { allow: (provider) => provider.id !== 'b' })?.provider).toBe(a);
    // with c = 1.25 and L = 5 the bound is ⌈1.25 × 6 × 8 / 24⌉ = 3: a (4 in flight) is over it
    expect(pickResident(turn2, [a, { ...b, available: false }, idle], index, 1.25)).toBeUndefined();
  });

  it('falls back (undefined) for a cold prefix, an empty index, or candidates that report nothing', () => {
    const index = new ResidencyIndex();
    const [a, b] = [agent('a'), agent('b')];
    expect(pickResident(turn2, [a, b], index, 1.25)).toBeUndefined();
    index.apply('ses_a', { reset: false, prefixes: [{ key: 12345n, cachedTokens: 512 }] });
    expect(pickResident(turn2, [a, b], index, 1.25)).toBeUndefined();
    index.apply('ses_gone', { reset: false, prefixes: [{ key: BigInt(whole), cachedTokens: 512 }] });
    expect(pickResident(turn2, [a, b], index, 1.25)).toBeUndefined();
  });
});
