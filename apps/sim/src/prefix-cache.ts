/**
 * A model of vLLM's automatic prefix caching: the prompt is cut into full blocks of `blockSize`
 * token ids, each block is named by a hash chained over every block before it (so a block hits
 * only when the whole prefix up to it matches), and the cache is an LRU of those hashes with room
 * for `capacity` blocks. A lookup counts its prompt tokens as queries and the tokens of the
 * matching leading blocks as hits, as vLLM's `prefix_cache_queries` / `prefix_cache_hits`
 * counters do (both in tokens).
 */

/** FNV-1a over 32-bit words, two lanes with different offsets, giving a 53-bit chained hash. */
function chain(parent: number, ids: readonly number[], from: number, to: number): number {
  let low = (parent & 0xffffffff) ^ 0x811c9dc5;
  let high = Math.floor(parent / 0x100000000) ^ 0x01000193;
  for (let i = from; i < to; i++) {
    const id = ids[i]!;
    low = Math.imul(low ^ id, 0x01000193);
    high = Math.imul(high ^ (id + 0x9e3779b9), 0x01000193);
  }
  return (high & 0x1fffff) * 0x100000000 + (low >>> 0);
}

/** The chained hashes of every full block of `tokenIds`. */
export function blockHashes(tokenIds: readonly number[], blockSize: number): number[] {
  const hashes: number[] = [];
  let parent = 0;
  for (let end = blockSize; end <= tokenIds.length; end += blockSize) {
    parent = chain(parent, tokenIds, end - blockSize, end);
    hashes.push(parent);
  }
  return hashes;
}

export class PrefixCache {
  /** Insertion order is recency: the first key is the least recently used. */
  private readonly blocks = new Map<number, true>();
  queriesTokens = 0;
  hitsTokens = 0;

  constructor(
    private readonly capacity: number,
    readonly blockSize: number,
  ) {}

  /**
   * Counts a lookup of a prompt of `promptTokens` tokens whose full blocks are `hashes`, then
   * stores them (most recent). Returns the prompt tokens served from the cache.
   */
  lookupAndStore(hashes: readonly number[], promptTokens: number): number {
    let matched = 0;
    while (matched < hashes.length && this.blocks.has(hashes[matched]!)) matched++;
    const hitTokens = matched * this.blockSize;
    this.queriesTokens += promptTokens;
    this.hitsTokens += hitTokens;
    for (const hash of hashes) {
      this.blocks.delete(hash);
      this.blocks.set(hash, true);
    }
    while (this.blocks.size > this.capacity) this.blocks.delete(this.blocks.keys().next().value!);
    return hitTokens;
  }

  get size(): number {
    return this.blocks.size;
  }
}
