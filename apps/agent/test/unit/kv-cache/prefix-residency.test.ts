import fc from 'fast-check';
import { blockHashes, PagedKvCache, type KvCacheObserver } from '../../../../sim/src/index.js';
import { PrefixResidency } from '../../../src/kv-cache/prefix-residency.js';
import { ResidentBlocks } from '../../../src/kv-cache/resident-blocks.js';

const BLOCK = 4;

/** The sim's paged KV cache feeding the block index and the prefix residency as the agent applies events. */
function engine(numBlocks: number, blocks: ResidentBlocks, prefixes: PrefixResidency): PagedKvCache {
  const observer: KvCacheObserver = {
    stored: (hashes, parent, tokenIds, size) =>
      blocks.stored(
        hashes.map((hash) => hash.toString()),
        parent === null ? null : parent.toString(),
        tokenIds,
        size,
      ),
    removed: (hashes) => {
      const strings = hashes.map((hash) => hash.toString());
      blocks.removed(strings);
      prefixes.removed(strings);
    },
    cleared: () => {
      blocks.clear();
      prefixes.clear();
    },
  };
  return new PagedKvCache(numBlocks, BLOCK, observer);
}

const prompt = (seed: number, length: number) => Array.from({ length }, (_, i) => seed * 1000 + i);

describe('PrefixResidency', () => {
  it('maps a key to its resident blocks and reports it, then lowers it when a block of its chain is evicted', () => {
    const blocks = new ResidentBlocks(1_000);
    const prefixes = new PrefixResidency(100);
    const cache = engine(6, blocks, prefixes);
    const tokens = prompt(1, 18); // 4 full blocks
    cache.release(cache.allocate(blockHashes(tokens, BLOCK), tokens, tokens.length));
    expect(prefixes.needsMapping(7)).toBe(true);
    prefixes.mapped(7, blocks.cachedPrefix(tokens), BLOCK);
    expect(prefixes.needsMapping(7)).toBe(false);
    expect(prefixes.takeReport(10)).toEqual({ reset: false, prefixes: [{ key: 7, cachedTokens: 16 }] });
    expect(prefixes.takeReport(10)).toBeUndefined();
    // Another prompt needs 4 blocks of 6: the LRU free blocks of the first go (vLLM frees a finished sequence's last
    // block first).
    const other = prompt(2, 16);
    cache.release(cache.allocate(blockHashes(other, BLOCK), other, other.length));
    const report = prefixes.takeReport(10)!;
    expect(report.reset).toBe(false);
    expect(report.prefixes).toHaveLength(1);
    expect(report.prefixes[0]!.cachedTokens).toBe(BLOCK * blocks.cachedPrefix(tokens).length);
    expect(report.prefixes[0]!.cachedTokens).toBeLessThan(16);
    // some blocks went: the next run of that prompt maps it again
    expect(prefixes.needsMapping(7)).toBe(true);
  });

  it('AllBlocksCleared forgets every key with a reset', () => {
    const blocks = new ResidentBlocks(1_000);
    const prefixes = new PrefixResidency(100);
    const cache = engine(64, blocks, prefixes);
    const tokens = prompt(3, 32);
    cache.release(cache.allocate(blockHashes(tokens, BLOCK), tokens, tokens.length));
    prefixes.mapped(1, blocks.cachedPrefix(tokens), BLOCK);
    prefixes.mapped(2, blocks.cachedPrefix(tokens.slice(0, 8)), BLOCK);
    prefixes.takeReport(10);
    cache.clear();
    expect(prefixes.takeReport(10)).toEqual({ reset: true, prefixes: [] });
    expect(prefixes.size).toBe(0);
    expect(prefixes.snapshot(10)).toEqual([{ reset: true, prefixes: [] }]);
  });

  it('holds at most maxPrefixes keys and reports the ones it drops as gone', () => {
    const prefixes = new PrefixResidency(2);
    prefixes.mapped(1, ['a'], BLOCK);
    prefixes.mapped(2, ['a', 'b'], BLOCK);
    prefixes.needsMapping(1); // 1 is recent again
    prefixes.mapped(3, ['c'], BLOCK);
    expect(prefixes.size).toBe(2);
    expect(prefixes.cachedTokens(2)).toBe(0);
    expect(prefixes.takeReport(10)!.prefixes).toEqual([
      { key: 1, cachedTokens: 4 },
      { key: 2, cachedTokens: 0 },
      { key: 3, cachedTokens: 4 },
    ]);
    // the whole state in reports of at most `limit` keys, the first one resetting
    expect(prefixes.snapshot(1)).toEqual([
      { reset: true, prefixes: [{ key: 1, cachedTokens: 4 }] },
      { reset: false, prefixes: [{ key: 3, cachedTokens: 4 }] },
    ]);
    // a removed block shared by two keys cuts both
    prefixes.removed(['a', 'c']);
    expect(prefixes.size).toBe(0);
  });

  it('matches the engine: a key’s cached tokens are its resident leading blocks, whatever was stored and evicted', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 4 }), fc.integer({ min: 1, max: 40 })), {
          minLength: 1,
          maxLength: 30,
        }),
        (runs) => {
          const blocks = new ResidentBlocks(10_000);
          const prefixes = new PrefixResidency(1_000);
          const cache = engine(24, blocks, prefixes);
          const seen = new Map<number, number[]>();
          for (const [seed, length] of runs) {
            const tokens = prompt(seed, length);
            cache.release(cache.allocate(blockHashes(tokens, BLOCK), tokens, tokens.length));
            const key = seed * 100 + length;
            if (prefixes.needsMapping(key)) prefixes.mapped(key, blocks.cachedPrefix(tokens), BLOCK);
            seen.set(key, tokens);
          }
          // Never more than what is resident (a key's chain only shrinks by events).
          for (const [key, tokens] of seen)
            expect(prefixes.cachedTokens(key)).toBeLessThanOrEqual(BLOCK * blocks.cachedPrefix(tokens).length);
        },
      ),
    );
  });
});
