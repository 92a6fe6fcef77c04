import { chatPrefixKeys, keysToMap, MAX_PREFIX_KEYS, prefixKeys } from '../../../src/pool/prefix-keys.js';
import { ResidencyIndex } from '../../../src/pool/residency-index.js';
import { PrefillLedger, TokenRatio } from '../../../src/pool/prefill-ledger.js';
import type { PrefixKeys } from '../../../src/pool/prefix-keys.js';
import {
  expectedCostMs,
  pickResident,
  type CostContext,
  type ResidentCandidate,
} from '../../../src/pool/resident-pick.js';
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

/**
 * Prefix keys with real sizes: `chars[i]` characters up to key i. The figures below use the sim's 0.2 tokens per
 * character and an H100's 20 000 prefill tokens/s (apps/sim gpu-h100-8b) unless a test says otherwise.
 */
function keysOf(chars: number[], leadingSystem = true): PrefixKeys {
  return {
    keys: chars.map((_, i) => 1_000 + i),
    messages: chars.map((_, i) => i + 1),
    chars,
    total: chars.length,
    leadingSystem,
  };
}

const H100: CostContext = { loadFactor: 1.25, prefillTokensPerS: 20_000, tokensPerChar: 0.2 };

function hold(index: ResidencyIndex, session: string, key: number, cachedTokens: number): void {
  index.apply(session, { reset: false, prefixes: [{ key: BigInt(key), cachedTokens }] });
}

describe('expectedCostMs', () => {
  it('is the queued prefill plus the uncached tokens at the prefill rate', () => {
    expect(expectedCostMs(300, 4_000, 20_000)).toBe(500);
    expect(expectedCostMs(0, 16_500, 2_800)).toBeCloseTo(5_892.86, 2);
    expect(expectedCostMs(120, -5, 20_000)).toBe(120);
  });
});

describe('pickResident', () => {
  // Turn 3 of a session: system (80 000 chars = 16 000 tokens), user₁, assistant₁, user₂, assistant₂, user₃:
  // 90 000 chars = 18 000 tokens. Turn 2's whole prompt (4 messages, 88 000 chars) is key 1 003.
  const turn3 = keysOf([80_000, 82_500, 85_000, 88_000, 89_500, 90_000]);
  const [systemKey, , , turn2Key] = turn3.keys as [number, number, number, number];

  it('keeps a later turn on its home: 400 tokens to compute there (20 ms) against 2 000 (100 ms) or 18 000 (900 ms)', () => {
    const index = new ResidencyIndex();
    const [home, shared, cold] = [agent('home'), agent('shared'), agent('cold')];
    hold(index, 'ses_home', turn2Key, 17_600);
    hold(index, 'ses_shared', systemKey, 16_000);
    const pick = pickResident(turn3, [cold, shared, home], index, H100)!;
    expect(pick.provider).toBe(home);
    expect(pick).toMatchObject({
      cachedTokens: 17_600,
      uncachedTokens: 400,
      costMs: 20,
      prefillMs: 20,
      reason: 'home',
    });
    // the largest tokens-per-character held is the sample the ratio learns from: 0.2 here
    expect(pick.sampleTokens / pick.sampleChars).toBe(0.2);
  });

  it('moves a later turn only when its home is clearly worse: 120 ms against 100 stays, 520 against 100 moves', () => {
    const index = new ResidencyIndex();
    const [home, shared] = [agent('home'), agent('shared')];
    hold(index, 'ses_home', turn2Key, 17_600);
    hold(index, 'ses_shared', systemKey, 16_000);
    const backlog = new Map([['home', 100]]);
    const context = { ...H100, backlogMs: (provider: { id: string }) => backlog.get(provider.id) ?? 0 };
    expect(pickResident(turn3, [home, shared], index, context)).toMatchObject({ provider: home, costMs: 120 });
    backlog.set('home', 500);
    const moved = pickResident(turn3, [home, shared], index, context)!;
    expect(moved).toMatchObject({ provider: shared, costMs: 100, uncachedTokens: 2_000, reason: 'moved' });
  });

  it('leaves a home that is over twice the bounded load, whatever it holds', () => {
    const index = new ResidencyIndex();
    const home = agent('home', 7);
    const idle = agent('idle', 0);
    hold(index, 'ses_home', turn2Key, 17_600);
    // L = 7 over 2 × 8 slots: bound ⌈1.25 × 8 × 8 / 16⌉ = 5, home limit 10
    expect(pickResident(turn3, [home, idle], index, H100)?.provider).toBe(home);
    home.inFlight = 8;
    // L = 8: bound ⌈1.25 × 9 / 2⌉ = 6, limit 12: still home
    expect(pickResident(turn3, [home, idle], index, H100)?.provider).toBe(home);
    const third = agent('third', 0);
    // three agents, L = 8: bound ⌈1.25 × 9 × 8 / 24⌉ = 4, limit 8: home (8) is over it
    expect(pickResident(turn3, [home, idle, third], index, H100)).toMatchObject({ provider: idle, reason: 'moved' });
  });

  // A first turn: system (80 000 chars) and one user message (2 500): 16 500 tokens.
  const first = keysOf([80_000, 82_500]);

  it('sends a first turn to a system-prompt holder while it is not busier than recomputing elsewhere', () => {
    const index = new ResidencyIndex();
    const [a, b, c] = [agent('a'), agent('b'), agent('c')];
    hold(index, 'ses_a', first.keys[0]!, 16_000);
    hold(index, 'ses_b', first.keys[0]!, 16_000);
    const backlog = new Map([
      ['a', 600],
      ['b', 0],
    ]);
    const context = { ...H100, backlogMs: (provider: { id: string }) => backlog.get(provider.id) ?? 0 };
    // a: 600 + 25 ms, b: 25 ms, c: 825 ms
    expect(pickResident(first, [a, b, c], index, context)).toMatchObject({
      provider: b,
      uncachedTokens: 500,
      costMs: 25,
      reason: 'spread',
    });
    // both holders 1 s behind: recomputing the system prompt on c (825 ms) is sooner
    backlog.set('a', 1_000).set('b', 1_000);
    expect(pickResident(first, [a, b, c], index, context)).toMatchObject({ provider: c, costMs: 825 });
    // on an A10G (2 800 tokens/s) the same recompute takes 5.9 s: the holders' 1 s queue is worth waiting
    expect(pickResident(first, [a, b, c], index, { ...context, prefillTokensPerS: 2_800 })?.provider).toBe(a);
  });

  it('spreads first turns by the bounded load: a holder at its bound is passed over', () => {
    const index = new ResidencyIndex();
    const a = agent('a', 2);
    const [b, c] = [agent('b'), agent('c')];
    hold(index, 'ses_a', first.keys[0]!, 16_000);
    // L = 2 over 24 slots: bound ⌈1.25 × 3 × 8 / 24⌉ = 2, a is at it
    expect(pickResident(first, [a, b, c], index, H100)).toMatchObject({ provider: b, costMs: 825 });
    // L = 4: the bound ⌈1.25 × 5 × 8 / 24⌉ = 3 follows the load up, and a takes it again
    b.inFlight = 1;
    c.inFlight = 1;
    expect(pickResident(first, [a, b, c], index, H100)).toMatchObject({ provider: a, costMs: 25 });
  });

  it('places a cold prompt (nothing held, or an empty index) on the shortest prefill queue, ties to the lower load', () => {
    const index = new ResidencyIndex();
    // L = 4 over 24 slots: bound ⌈1.25 × 5 × 8 / 24⌉ = 3, every one within it
    const [a, b, c] = [agent('a', 2), agent('b', 1), agent('c', 1)];
    const backlog = new Map([['b', 300]]);
    const context = { ...H100, backlogMs: (provider: { id: string }) => backlog.get(provider.id) ?? 0 };
    expect(pickResident(first, [a, b, c], index, context)).toMatchObject({ provider: c, costMs: 825, cachedTokens: 0 });
    hold(index, 'ses_a', 12_345, 512);
    backlog.set('c', 300);
    expect(pickResident(first, [a, b, c], index, context)).toMatchObject({ provider: a, costMs: 825 });
  });

  it('counts a prefix that was partly evicted by what is left of it', () => {
    const index = new ResidencyIndex();
    const [a, b] = [agent('a'), agent('b')];
    // a holds only 8 000 of the system prompt's 16 000 tokens: 8 500 to compute (425 ms)
    hold(index, 'ses_a', first.keys[0]!, 8_000);
    expect(pickResident(first, [a, b], index, H100)).toMatchObject({ provider: a, uncachedTokens: 8_500, costMs: 425 });
  });

  it('divides by the provider weight: a weight-2 provider prefills twice as fast', () => {
    const index = new ResidencyIndex();
    const big = { ...agent('big'), weight: 2 };
    const small = agent('small');
    const context = { ...H100, backlogMs: (provider: { id: string }) => (provider.id === 'big' ? 500 : 0) };
    // big: 500 + 412.5 ms, small: 825 ms
    expect(pickResident(first, [big, small], index, context)?.provider).toBe(small);
    expect(pickResident(first, [big, small], index, H100)).toMatchObject({ provider: big, costMs: 412.5 });
  });

  it('never picks a candidate that is not eligible, whatever it holds; undefined when none is', () => {
    const index = new ResidencyIndex();
    const [a, b] = [agent('a'), agent('b')];
    hold(index, 'ses_a', turn2Key, 17_600);
    expect(pickResident(turn3, [{ ...a, available: false }, b], index, H100)?.provider.id).toBe('b');
    expect(pickResident(turn3, [a, b], index, { ...H100, options: { exclude: new Set(['a']) } })?.provider).toBe(b);
    expect(pickResident(turn3, [a, b], index, { ...H100, options: { allow: (p) => p.id !== 'a' } })?.provider).toBe(b);
    expect(pickResident(turn3, [{ ...a, available: false }], index, H100)).toBeUndefined();
    // a departed session's report names no candidate
    hold(index, 'ses_gone', turn2Key, 17_600);
    expect(pickResident(turn3, [b], index, H100)).toMatchObject({ provider: b, cachedTokens: 0 });
  });

  function burst(loadFactor: number, count: number) {
    let now = 0;
    const ledger = new PrefillLedger(() => now);
    const index = new ResidencyIndex();
    const agents = ['a', 'b', 'c', 'd'].map((id) => agent(id, 0, 32));
    hold(index, 'ses_a', first.keys[0]!, 16_000);
    const context = { ...H100, loadFactor, backlogMs: (provider: { id: string }) => ledger.backlogMs(provider.id) };
    const served: string[] = [];
    for (let i = 0; i < count; i++) {
      const pick = pickResident(first, agents, index, context)!;
      ledger.charge(pick.provider.id, pick.prefillMs);
      pick.provider.inFlight++;
      served.push(pick.provider.id);
    }
    return { served, ledger, agents, index, context, advance: (ms: number) => (now += ms) };
  }

  it('with c = 1.25, a burst of first turns of one project spreads over the agents as their load grows', () => {
    // One system-prompt holder among 4 idle H100s, each pick charged and counted in flight: the bound
    // ⌈1.25 × (L + 1) / 4⌉ lets a take about a third, the others recompute the system prompt (825 ms each)
    const { served, ledger } = burst(1.25, 8);
    expect(served).toEqual(['a', 'b', 'c', 'a', 'd', 'b', 'a', 'c']);
    expect(ledger.backlogMs('a')).toBe(75);
    expect(ledger.backlogMs('b')).toBe(1_650);
  });

  it('with the bound out of the way, first turns stay on the holder until its queue costs more than recomputing', () => {
    const { served, ledger, agents, index, context, advance } = burst(8, 8);
    // 25 ms each on a: it stays cheapest (8 × 25 = 200 ms < 825) for all of them
    expect(served).toEqual(['a', 'a', 'a', 'a', 'a', 'a', 'a', 'a']);
    expect(ledger.backlogMs('a')).toBe(200);
    // 40 more at once: a takes them until its queue plus 25 ms reaches a cold agent's 825 ms (32 in all), then the
    // cold agents take one each (the tie at 825 ms goes to the idle b) and a the next
    const more: string[] = [];
    for (let i = 0; i < 40; i++) {
      const pick = pickResident(first, agents, index, context)!;
      ledger.charge(pick.provider.id, pick.prefillMs);
      more.push(pick.provider.id);
    }
    expect(more.slice(0, 24)).toEqual(Array.from({ length: 24 }, () => 'a'));
    expect(more.slice(24, 28)).toEqual(['b', 'c', 'd', 'a']);
    advance(10_000);
    expect(ledger.backlogMs('a')).toBe(0);
  });
});

describe('PrefillLedger and TokenRatio', () => {
  it('queues prefill work per provider and drains it in real time', () => {
    let now = 1_000;
    const ledger = new PrefillLedger(() => now);
    ledger.charge('a', 800);
    ledger.charge('a', 25);
    expect(ledger.backlogMs('a')).toBe(825);
    now += 500;
    expect(ledger.backlogMs('a')).toBe(325);
    // work sent to an idle provider starts now, not where its old queue ended
    now += 1_000;
    expect(ledger.backlogMs('a')).toBe(0);
    expect(ledger.size).toBe(0);
    ledger.charge('a', 100);
    expect(ledger.backlogMs('a')).toBe(100);
    ledger.charge('b', Number.NaN);
    ledger.charge('b', -1);
    expect(ledger.backlogMs('b')).toBe(0);
    ledger.forget('a');
    expect(ledger.size).toBe(0);
  });

  it('learns tokens per character from resident prefixes, ignoring short or impossible ones', () => {
    const ratio = new TokenRatio(0.25, 0.5);
    expect(ratio.tokens(80_000)).toBe(20_000);
    ratio.observe(16_000, 80_000);
    expect(ratio.value).toBeCloseTo(0.225, 10);
    ratio.observe(16_000, 80_000);
    expect(ratio.value).toBeCloseTo(0.2125, 10);
    ratio.observe(100, 200); // too short
    ratio.observe(1_000_000, 80_000); // 12.5 tokens per character: not a prefix's
    ratio.observe(0, 80_000);
    expect(ratio.value).toBeCloseTo(0.2125, 10);
  });
});
