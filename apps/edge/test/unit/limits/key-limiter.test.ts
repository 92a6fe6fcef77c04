import { IopError } from '@iop/core';
import { MemoryCounterStore } from '../../../src/limits/counter-store.js';
import { FailoverCounterStore } from '../../../src/limits/failover-counter-store.js';
import { KeyLimiter, LimitRefusal } from '../../../src/limits/key-limiter.js';
import { anthropicMessages, openaiChat } from '@iop/dialects';
import type { ApiKeyRecord } from '../../../src/keys/api-key.js';
import { createLogger } from '../../../src/logger.js';

const record = (policy: Partial<ApiKeyRecord>): ApiKeyRecord => ({
  id: 'key_1',
  name: 'test',
  owner: '',
  keyHash: 'h',
  createdAtMs: 0,
  source: 'config',
  ...policy,
});
// 10 s into a minute: 50 s until the window resets.
const T0 = Date.UTC(2026, 0, 1, 12, 0, 10);

describe('KeyLimiter', () => {
  let clock = T0;
  const now = () => clock;
  beforeEach(() => (clock = T0));

  it('admits requestsPerMinute requests per window, refuses the next with Retry-After to the window end, and counts none refused', async () => {
    const counters = new MemoryCounterStore(now);
    const limiter = new KeyLimiter(counters, { now });
    const key = record({ limits: { requestsPerMinute: 2 } });
    const first = await limiter.admit(key);
    expect(first.state.requests).toEqual({ limit: 2, remaining: 1, resetAtMs: Date.UTC(2026, 0, 1, 12, 1, 0) });
    await limiter.admit(key);
    const refused = await limiter.admit(key).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(LimitRefusal);
    expect((refused as LimitRefusal).status).toBe(429);
    expect((refused as LimitRefusal).retryAfterSeconds).toBe(50);
    expect((refused as LimitRefusal).state.requests?.remaining).toBe(0);
    await expect(limiter.admit(key)).rejects.toBeInstanceOf(LimitRefusal);
    clock += 50_000; // the next minute
    await expect(limiter.admit(key)).resolves.toMatchObject({ state: { requests: { remaining: 1 } } });
    await counters.close();
  });

  it('refuses once the tokens of finished requests reach tokensPerMinute', async () => {
    const limiter = new KeyLimiter(new MemoryCounterStore(now), { now });
    const key = record({ limits: { tokensPerMinute: 100 } });
    const first = await limiter.admit(key);
    await first.finish(60);
    const second = await limiter.admit(key);
    expect(second.state.tokens?.remaining).toBe(40);
    await second.finish(60);
    await expect(limiter.admit(key)).rejects.toThrow('used 120 of 100 tokens per minute');
  });

  it('holds a stream slot from admission to finish', async () => {
    const limiter = new KeyLimiter(new MemoryCounterStore(now), { now });
    const key = record({ limits: { maxConcurrentStreams: 1 } });
    const held = await limiter.admit(key);
    await expect(limiter.admit(key)).rejects.toThrow('allows 1 concurrent streams');
    await held.finish(0);
    await held.finish(0); // a second finish changes nothing
    const next = await limiter.admit(key);
    await expect(limiter.admit(key)).rejects.toBeInstanceOf(LimitRefusal);
    await next.finish(0);
  });

  it('renews the stream leases it holds; the leases of an edge that stopped renewing (died) lapse', async () => {
    const counters = new MemoryCounterStore(now);
    const alive = new KeyLimiter(counters, { now, streamLeaseMs: 15_000 });
    const dead = new KeyLimiter(counters, { now, streamLeaseMs: 15_000 });
    const other = new KeyLimiter(counters, { now, streamLeaseMs: 15_000 });
    const key = record({ limits: { maxConcurrentStreams: 2 } });
    const running = await alive.admit(key);
    await dead.admit(key); // never finished: its edge is killed
    dead.close();
    for (let step = 0; step < 4; step++) {
      clock += 5_000;
      await alive.renew();
    }
    // 20 s on: the dead edge's lease lapsed at 15 s, the live one is still held.
    const third = await other.admit(key);
    await expect(other.admit(key)).rejects.toThrow('allows 2 concurrent streams');
    await running.finish(0);
    await third.finish(0);
    await expect(other.admit(key)).resolves.toBeDefined();
    alive.close();
    other.close();
  });

  it('names the budget when it is exhausted, and seeds it once from the ledger', async () => {
    const usedSince = jest.fn(async () => ({ tokens: 900, costUsd: 0 }));
    const limiter = new KeyLimiter(new MemoryCounterStore(now), { now, usedSince });
    const key = record({ name: 'team-a', budget: { maxTokens: 1000, period: 'day' } });
    const admission = await limiter.admit(key);
    expect(usedSince).toHaveBeenCalledWith('key_1', Date.UTC(2026, 0, 1));
    await admission.finish(150);
    const refused = (await limiter.admit(key).catch((error: unknown) => error)) as LimitRefusal;
    expect(refused.message).toBe('budget exhausted: key "team-a" has used 1050 of its 1000-token per-day budget');
    expect(refused.retryAfterSeconds).toBe(12 * 3600 - 10);
    expect(usedSince).toHaveBeenCalledTimes(1);
  });

  it("a money budget counts each request's cost and refuses once it is spent, seeded from the ledger; tokens alone do not count", async () => {
    const usedSince = jest.fn(async () => ({ tokens: 5_000_000, costUsd: 0.004 }));
    const counters = new MemoryCounterStore(now);
    const limiter = new KeyLimiter(counters, { now, usedSince });
    const key = record({ name: 'team-b', budget: { maxCostUsd: 0.01, period: 'month' } });
    // Seeded with $0.004: 5 M tokens used, but no token budget to hold them against.
    await (await limiter.admit(key)).finish(100, 0.005);
    // $0.009 of $0.01: admitted; a request of no cost (an unpriced model) counts nothing.
    await (await limiter.admit(key)).finish(100, 0);
    await (await limiter.admit(key)).finish(100, 0.001);
    const refused = (await limiter.admit(key).catch((error: unknown) => error)) as LimitRefusal;
    expect(refused).toBeInstanceOf(LimitRefusal);
    expect(refused.message).toBe('budget exhausted: key "team-b" has spent $0.01 of its $0.01 per-month budget');
    expect(refused.retryAfterSeconds).toBe((Date.UTC(2026, 1, 1) - T0) / 1000);
    expect(usedSince).toHaveBeenCalledWith('key_1', Date.UTC(2026, 0, 1));
    // Counted in nano-dollars: 0.01 USD = 10 000 000.
    expect(await counters.get(`budget-usd:key_1:month:${Date.UTC(2026, 0, 1)}`)).toBe(10_000_000);
    // The next month starts a new budget.
    clock = Date.UTC(2026, 1, 1, 0, 0, 1);
    await expect(limiter.admit(key)).resolves.toBeDefined();
  });

  it('with both budgets the first reached refuses', async () => {
    const limiter = new KeyLimiter(new MemoryCounterStore(now), { now });
    const key = record({ name: 'both', budget: { maxTokens: 1000, maxCostUsd: 1, period: 'total' } });
    await (await limiter.admit(key)).finish(10, 1.5);
    await expect(limiter.admit(key)).rejects.toThrow(
      'budget exhausted: key "both" has spent $1.50 of its $1 total budget',
    );
    const tokens = record({
      id: 'key_2',
      name: 'tokens first',
      budget: { maxTokens: 1000, maxCostUsd: 1, period: 'total' },
    });
    await (await limiter.admit(tokens)).finish(1000, 0.000_002);
    await expect(limiter.admit(tokens)).rejects.toThrow(
      'budget exhausted: key "tokens first" has used 1000 of its 1000-token total budget',
    );
  });
});

describe('FailoverCounterStore', () => {
  const broken = {
    add: async () => Promise.reject(new Error('down')),
    get: async () => Promise.reject(new Error('down')),
    acquireSlot: async () => Promise.reject(new Error('down')),
    releaseSlot: async () => Promise.reject(new Error('down')),
    renewSlots: async () => Promise.reject(new Error('down')),
    publish: async () => {},
    onMessage: () => {},
    close: async () => {},
  };
  const logger = createLogger('silent');

  it('fails open onto local counters', async () => {
    const store = new FailoverCounterStore(broken, 'open', logger);
    expect(await store.add('a', 2, 1000)).toBe(2);
    expect(await store.add('a', 2, 1000)).toBe(4);
    expect((await store.acquireSlot('s', 'l1', 1, 1000)).acquired).toBe(true);
    expect((await store.acquireSlot('s', 'l2', 1, 1000)).acquired).toBe(false);
    await store.releaseSlot('s', 'l1');
    expect((await store.acquireSlot('s', 'l2', 1, 1000)).acquired).toBe(true);
    expect(store.failures).toBe(5);
    await store.close();
  });

  it('fails closed with a 503', async () => {
    const store = new FailoverCounterStore(broken, 'closed', logger);
    const error = (await store.add('a', 1, 1000).catch((caught: unknown) => caught)) as IopError;
    expect(error).toBeInstanceOf(IopError);
    expect(error.status).toBe(503);
    expect(error.retryAfterSeconds).toBe(1);
    await store.close();
  });
});

describe("the dialects' rate-limit headers", () => {
  const state = {
    requests: { limit: 10, remaining: 3, resetAtMs: T0 + 50_000 },
    tokens: { limit: 1000, remaining: -5, resetAtMs: T0 + 50_000 },
  };
  const collect = (dialect: 'openai-chat' | 'anthropic-messages') => {
    const headers: Record<string, string> = {};
    const write = dialect === 'openai-chat' ? openaiChat.rateLimitHeaders : anthropicMessages.rateLimitHeaders;
    write(state, T0, (name, value) => (headers[name] = value));
    return headers;
  };

  it("writes OpenAI's x-ratelimit-* headers", () => {
    expect(collect('openai-chat')).toEqual({
      'x-ratelimit-limit-requests': '10',
      'x-ratelimit-remaining-requests': '3',
      'x-ratelimit-reset-requests': '50s',
      'x-ratelimit-limit-tokens': '1000',
      'x-ratelimit-remaining-tokens': '0',
      'x-ratelimit-reset-tokens': '50s',
    });
  });

  it("writes Anthropic's anthropic-ratelimit-* headers with RFC 3339 resets", () => {
    expect(collect('anthropic-messages')).toEqual({
      'anthropic-ratelimit-requests-limit': '10',
      'anthropic-ratelimit-requests-remaining': '3',
      'anthropic-ratelimit-requests-reset': '2026-01-01T12:01:00Z',
      'anthropic-ratelimit-tokens-limit': '1000',
      'anthropic-ratelimit-tokens-remaining': '0',
      'anthropic-ratelimit-tokens-reset': '2026-01-01T12:01:00Z',
    });
  });
});
