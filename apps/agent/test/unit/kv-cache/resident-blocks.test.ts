import fc from 'fast-check';
import { blockHashes, PagedKvCache, type KvCacheObserver } from '../../../../sim/src/index.js';
import { ResidentBlocks } from '../../../src/kv-cache/resident-blocks.js';

/**
 * The sim's paged KV cache (the model server's stand-in) feeding an index through its events, as they would arrive
 * decoded.
 */
function engine(numBlocks: number, blockSize: number, index: ResidentBlocks): PagedKvCache {
  const observer: KvCacheObserver = {
    stored: (hashes, parent, tokenIds, size) =>
      index.stored(
        hashes.map((hash) => hash.toString()),
        parent === null ? null : parent.toString(),
        tokenIds,
        size,
      ),
    removed: (hashes) => index.removed(hashes.map((hash) => hash.toString())),
    cleared: () => index.clear(),
  };
  return new PagedKvCache(numBlocks, blockSize, observer);
}

describe('ResidentBlocks', () => {
  it('finds the cached leading blocks of a prompt by their token ids, without knowing how the engine hashes', () => {
    const index = new ResidentBlocks(1_000);
    const cache = engine(100, 4, index);
    const prompt = Array.from({ length: 18 }, (_, i) => i * 7);
    cache.release(cache.allocate(blockHashes(prompt, 4), prompt, prompt.length));
    expect(index.cachedPrefix(prompt)).toHaveLength(4); // 16 of 18 tokens: 4 full blocks
    // a change in block 3 ends the match
    expect(index.cachedPrefix([...prompt.slice(0, 8), 999, ...prompt.slice(9)])).toHaveLength(2);
    expect(index.cachedPrefix(prompt.slice(0, 7))).toHaveLength(1);
    expect(index.cachedPrefix([1, 2, 3])).toEqual([]);
  });

  it('keeps at most maxBlocks blocks, dropping the oldest', () => {
    const index = new ResidentBlocks(3);
    index.stored(['a', 'b'], null, [1, 2, 3, 4], 2);
    index.stored(['c', 'd'], null, [5, 6, 7, 8], 2);
    expect(index.size).toBe(3);
    expect(index.has('a')).toBe(false);
    expect(index.overflowed).toBe(1);
    expect(index.cachedPrefix([5, 6, 7, 8])).toEqual(['c', 'd']);
  });

  it('answers every prompt as the engine would match it, under any sequence of requests and evictions', () => {
    const prompts = fc.array(fc.array(fc.integer({ min: 0, max: 2 }), { maxLength: 10 }), {
      minLength: 1,
      maxLength: 6,
    });
    const step = fc.record({ prompt: fc.nat(), hold: fc.boolean(), clear: fc.boolean() });
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 8 }),
        prompts,
        fc.array(step, { maxLength: 40 }),
        (numBlocks, pool, steps) => {
          const index = new ResidentBlocks(10_000);
          const cache = engine(numBlocks, 2, index);
          const held: Array<ReturnType<PagedKvCache['allocate']>> = [];
          for (const entry of steps) {
            const ids = pool[entry.prompt % pool.length]!;
            const allocation = cache.allocate(blockHashes(ids, 2), ids, ids.length);
            if (entry.hold) held.push(allocation);
            else cache.release(allocation);
            if (entry.clear && held.length > 0) cache.release(held.shift()!);
            for (const prompt of pool)
              expect(index.cachedPrefix(prompt).length).toBe(cache.matchedBlocks(blockHashes(prompt, 2)));
          }
        },
      ),
    );
  });
});
