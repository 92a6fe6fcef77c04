import fc from 'fast-check';
import { costOf, nanoUsd, priceOf } from '../../../src/ledger/pricing.js';

describe('priceOf', () => {
  const pricing = {
    models: {
      'gpt-4o-mini': { input: 0.15, cachedInput: 0.075, output: 0.6 },
      'qwen3-8b': { input: 0.05, output: 0.2 },
      'Qwen/Qwen3-32B': { input: 0.1, output: 0.4 },
    },
  };

  it('takes the name the client sent, then its group, then the served model', () => {
    expect(priceOf(pricing, ['gpt-4o-mini', 'qwen3-8b', 'Qwen/Qwen3-8B'])).toBe(pricing.models['gpt-4o-mini']);
    expect(priceOf(pricing, ['an-alias', 'qwen3-8b', 'Qwen/Qwen3-8B'])).toBe(pricing.models['qwen3-8b']);
    expect(priceOf(pricing, ['big', 'big', 'Qwen/Qwen3-32B'])).toBe(pricing.models['Qwen/Qwen3-32B']);
    expect(priceOf(pricing, ['other', 'unknown', undefined])).toBeUndefined();
  });

  it("never reads Object.prototype's names", () => {
    expect(priceOf(pricing, ['toString', '__proto__', 'constructor'])).toBeUndefined();
  });
});

describe('costOf', () => {
  const price = { input: 0.15, cachedInput: 0.075, output: 0.6 };

  it('prices input, cached input and output per million tokens', () => {
    // 1 000 prompt tokens of which 400 cached, 200 completion tokens:
    // (600 × 0.15 + 400 × 0.075 + 200 × 0.6) / 1e6 = (90 + 30 + 120) / 1e6
    expect(costOf(price, { inputTokens: 1000, cachedInputTokens: 400, outputTokens: 200 })).toBeCloseTo(240e-6, 15);
    // One million output tokens cost the output price.
    expect(costOf(price, { inputTokens: 0, outputTokens: 1_000_000 })).toBeCloseTo(0.6, 12);
  });

  it('prices cached tokens at the input price when no cached price is set, and costs 0 without a price or usage', () => {
    expect(costOf({ input: 1, output: 2 }, { inputTokens: 10, cachedInputTokens: 10, outputTokens: 0 })).toBeCloseTo(
      10e-6,
      15,
    );
    expect(costOf(undefined, { inputTokens: 10, outputTokens: 10 })).toBe(0);
    expect(costOf(price, undefined)).toBe(0);
  });

  it('is additive over requests, within rounding, and never negative (cached capped at input)', () => {
    const usage = fc.record({
      inputTokens: fc.integer({ min: 0, max: 200_000 }),
      cachedInputTokens: fc.integer({ min: 0, max: 250_000 }),
      outputTokens: fc.integer({ min: 0, max: 100_000 }),
    });
    fc.assert(
      fc.property(usage, usage, (a, b) => {
        const split = costOf(price, a) + costOf(price, b);
        const cap = (u: typeof a) => ({ ...u, cachedInputTokens: Math.min(u.inputTokens, u.cachedInputTokens) });
        const [ca, cb] = [cap(a), cap(b)];
        const joined = costOf(price, {
          inputTokens: ca.inputTokens + cb.inputTokens,
          cachedInputTokens: ca.cachedInputTokens + cb.cachedInputTokens,
          outputTokens: ca.outputTokens + cb.outputTokens,
        });
        expect(costOf(price, a)).toBeGreaterThanOrEqual(0);
        expect(Math.abs(split - joined)).toBeLessThan(1e-12);
      }),
    );
  });

  it('counts money in nano-dollars', () => {
    expect(nanoUsd(0.01)).toBe(10_000_000);
    expect(nanoUsd(costOf({ input: 0.01, output: 0 }, { inputTokens: 1 }))).toBe(10);
  });
});
