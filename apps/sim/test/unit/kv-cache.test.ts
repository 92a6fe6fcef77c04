import fc from 'fast-check';
import { blockHashes, PagedKvCache, type KvCacheObserver } from '../../src/index.js';

/** An observer that replays the events into the set of cached hashes, as a subscriber would. */
function mirror(): { observer: KvCacheObserver; cached: Set<number>; log: string[] } {
  const cached = new Set<number>();
  const log: string[] = [];
  return {
    cached,
    log,
    observer: {
      stored: (hashes, parent, tokenIds, blockSize) => {
        log.push(
          `stored ${hashes.length} parent=${parent === null ? 'null' : 'set'} tokens=${tokenIds.length}/${blockSize}`,
        );
        for (const hash of hashes) cached.add(hash);
      },
      removed: (hashes) => {
        log.push(`removed ${hashes.length}`);
        for (const hash of hashes) cached.delete(hash);
      },
      cleared: () => {
        log.push('cleared');
        cached.clear();
      },
    },
  };
}

describe('PagedKvCache', () => {
  it('hits only the leading blocks whose whole prefix matches', () => {
    const cache = new PagedKvCache(100, 2);
    const a = blockHashes([1, 2, 3, 4, 5, 6], 2);
    const b = blockHashes([1, 2, 9, 9, 5, 6], 2); // same first block, then diverges: its third block differs from a's
    expect(b[0]).toBe(a[0]);
    expect(b[2]).not.toBe(a[2]);
    cache.release(cache.allocate(a, [1, 2, 3, 4, 5, 6], 6));
    const second = cache.allocate(b, [1, 2, 9, 9, 5, 6], 6);
    expect(second.cachedTokens).toBe(2);
    expect([cache.queriesTokens, cache.hitsTokens]).toEqual([12, 2]);
    expect(cache.size).toBe(5); // a's three blocks and b's two new ones
  });

  it('never evicts a block a running sequence holds, and evicts the least recently used free block first', () => {
    const events = mirror();
    const cache = new PagedKvCache(4, 2, events.observer);
    const ids = (base: number) => [base, base + 1, base + 2, base + 3];
    const a = cache.allocate(blockHashes(ids(10), 2), ids(10), 4); // 2 blocks, held
    const b = cache.allocate(blockHashes(ids(20), 2), ids(20), 4); // 2 blocks, held: the cache is full
    expect(cache.usedBlocks).toBe(4);
    cache.release(b); // b's blocks are free but still cached
    expect(cache.size).toBe(4);
    const c = cache.allocate(blockHashes(ids(30), 2), ids(30), 4); // needs 2 blocks: evicts b's, never a's
    expect(events.cached.size).toBe(4);
    for (const hash of a.hashes) expect(events.cached.has(hash)).toBe(true);
    for (const hash of c.hashes) expect(events.cached.has(hash)).toBe(true);
    expect(cache.evictedBlocks).toBe(2);
    // The eviction that made room is told before the block that took it, as vLLM's block pool does.
    expect(events.log).toEqual([
      'stored 2 parent=null tokens=4/2',
      'stored 2 parent=null tokens=4/2',
      'removed 2',
      'stored 2 parent=null tokens=4/2',
    ]);
  });

  it('frees a finished sequence last block first, so its shared head outlives its tail', () => {
    const events = mirror();
    const cache = new PagedKvCache(3, 1, events.observer);
    const head = cache.allocate(blockHashes([1, 2, 3], 1), [1, 2, 3], 3);
    cache.release(head);
    cache.release(cache.allocate(blockHashes([7], 1), [7], 1)); // evicts the tail of [1, 2, 3] only
    const again = cache.allocate(blockHashes([1, 2, 3], 1), [1, 2, 3], 3);
    expect(again.cachedTokens).toBe(2);
  });

  it('tells a new block its parent and the token ids it was made of', () => {
    const stored: Array<{ parent: number | null; tokenIds: readonly number[] }> = [];
    const cache = new PagedKvCache(100, 2, {
      stored: (_h, parent, tokenIds) => stored.push({ parent, tokenIds }),
      removed: () => undefined,
      cleared: () => undefined,
    });
    const first = blockHashes([1, 2, 3, 4], 2);
    cache.allocate(first, [1, 2, 3, 4], 4);
    cache.allocate(blockHashes([1, 2, 3, 4, 5, 6, 7], 2), [1, 2, 3, 4, 5, 6, 7], 7);
    expect(stored).toEqual([
      { parent: null, tokenIds: [1, 2, 3, 4] },
      { parent: first[1], tokenIds: [5, 6] }, // the partial last block (7) is never cached
    ]);
  });

  it('grows a sequence by one block per blockSize generated tokens and refuses a reset while requests run', () => {
    const events = mirror();
    const cache = new PagedKvCache(10, 4, events.observer);
    const running = cache.allocate([], [], 6); // 2 private blocks
    cache.grow(running, 6, 10); // 16 tokens: 4 blocks
    expect(cache.usedBlocks).toBe(4);
    expect(cache.clear()).toBe(false);
    cache.release(running);
    expect(cache.usedBlocks).toBe(0);
    expect(cache.clear()).toBe(true);
    expect(events.log).toEqual(['cleared']);
  });

  it('keeps its state equal to what its events say, and within its capacity, under any sequence of requests', () => {
    const prompt = fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 0, maxLength: 12 });
    const step = fc.oneof(
      fc.record({ op: fc.constant('start' as const), ids: prompt }),
      fc.record({ op: fc.constant('end' as const), pick: fc.nat() }),
      fc.record({ op: fc.constant('grow' as const), pick: fc.nat(), tokens: fc.integer({ min: 0, max: 8 }) }),
      fc.constant({ op: 'clear' as const }),
    );
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 12 }), fc.array(step, { maxLength: 60 }), (numBlocks, steps) => {
        const events = mirror();
        const cache = new PagedKvCache(numBlocks, 2, events.observer);
        const live: Array<{ allocation: ReturnType<PagedKvCache['allocate']>; prompt: number }> = [];
        for (const entry of steps) {
          if (entry.op === 'start')
            live.push({
              allocation: cache.allocate(blockHashes(entry.ids, 2), entry.ids, entry.ids.length),
              prompt: entry.ids.length,
            });
          else if (entry.op === 'clear') cache.clear();
          else if (live.length > 0) {
            const target = live[entry.pick % live.length]!;
            if (entry.op === 'end') {
              cache.release(target.allocation);
              live.splice(live.indexOf(target), 1);
            } else cache.grow(target.allocation, target.prompt, entry.tokens);
          }
          // A subscriber replaying the events holds exactly the cached blocks.
          expect(events.cached.size).toBe(cache.size);
          for (const hash of events.cached) expect(cache.has(hash)).toBe(true);
          // Free blocks are kept only while they fit beside the held ones (held blocks may overfill: no preemption).
          expect(cache.freeBlocks === 0 || cache.usedBlocks + cache.freeBlocks <= numBlocks).toBe(true);
          // A block a running sequence holds is never evicted.
          for (const { allocation } of live) for (const hash of allocation.hashes) expect(cache.has(hash)).toBe(true);
        }
      }),
    );
  });
});
