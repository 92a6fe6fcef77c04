/**
 * A paged KV cache as vLLM's block manager keeps it (automatic prefix caching, vLLM V1
 * `KVCacheManager` / `BlockPool`), reduced to what decides hits, evictions and the KV events:
 * - the GPU holds `numBlocks` blocks of `blockSize` tokens;
 * - a prompt's full blocks are named by a hash chained over every block before it (a block hits
 *   only when the whole prefix up to it matches) and are cached once computed;
 * - a running sequence holds (references) its prompt's blocks, its last partial block and one
 *   block per `blockSize` generated tokens; a referenced block is never evicted;
 * - a block nobody references stays cached in a free queue ordered by last use; a new allocation
 *   that finds no empty block evicts from the head of that queue (least recently used). A finished
 *   sequence's blocks enter the queue tail-first, so its last (least shared) block goes first, as
 *   vLLM frees them in reverse order.
 * Generated tokens are not cached (vLLM also caches full blocks of the output; the next turn of a
 * conversation re-reads the answer through the chat template, whose tokens the sim does not model).
 *
 * Every change to the set of cached blocks is told to the observer as vLLM's KV events name them
 * (`BlockStored` with the new blocks' hashes, their parent's hash and their token ids,
 * `BlockRemoved`, `AllBlocksCleared`; vllm/distributed/kv_events.py).
 *
 * Counters follow vLLM's `prefix_cache_queries` / `prefix_cache_hits` (both in prompt tokens).
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

/** The chained hashes (53-bit integers) of every full block of `tokenIds`. */
export function blockHashes(tokenIds: readonly number[], blockSize: number): number[] {
  const hashes: number[] = [];
  let parent = 0;
  for (let end = blockSize; end <= tokenIds.length; end += blockSize) {
    parent = chain(parent, tokenIds, end - blockSize, end);
    hashes.push(parent);
  }
  return hashes;
}

/** What the cache tells its observer (the KV event publisher). */
export interface KvCacheObserver {
  /** Blocks newly cached, in prompt order: `parent` is the hash of the block before the first (null at the start). */
  stored(hashes: readonly number[], parent: number | null, tokenIds: readonly number[], blockSize: number): void;
  removed(hashes: readonly number[]): void;
  cleared(): void;
}

/** The blocks one running sequence holds. */
export interface KvAllocation {
  /** Its prompt's cached (hashed) blocks, in prompt order. */
  readonly hashes: readonly number[];
  /** Blocks it holds beyond those: the prompt's partial last block and the generated tokens' blocks. */
  privateBlocks: number;
  /** Prompt tokens served from the cache. */
  readonly cachedTokens: number;
  released: boolean;
}

export class PagedKvCache {
  /** Reference count of every cached block (0 = in the free queue). */
  private readonly refs = new Map<number, number>();
  /** Cached blocks nobody references; insertion order is recency (the first is evicted first). */
  private readonly free = new Map<number, true>();
  /** Physical blocks in use by running sequences: cached blocks with a reference, and private blocks. */
  private referenced = 0;
  queriesTokens = 0;
  hitsTokens = 0;
  /** Blocks evicted since start (`BlockRemoved` for a full block's reuse). */
  evictedBlocks = 0;

  constructor(
    readonly numBlocks: number,
    readonly blockSize: number,
    private readonly observer?: KvCacheObserver,
  ) {
    if (!Number.isSafeInteger(numBlocks) || numBlocks < 1)
      throw new RangeError(`numBlocks must be an integer >= 1, got ${numBlocks}`);
  }

  /** Cached blocks (referenced or free). */
  get size(): number {
    return this.refs.size;
  }

  /** Cached blocks nobody holds (evictable). */
  get freeBlocks(): number {
    return this.free.size;
  }

  /** Whether the block named `hash` is cached. */
  has(hash: number): boolean {
    return this.refs.has(hash);
  }

  /** Blocks held by running sequences. */
  get usedBlocks(): number {
    return Math.min(this.numBlocks, this.referenced);
  }

  /** Leading blocks of `hashes` that are cached now. */
  matchedBlocks(hashes: readonly number[]): number {
    let matched = 0;
    while (matched < hashes.length && this.refs.has(hashes[matched]!)) matched++;
    return matched;
  }

  /**
   * Blocks an admission of this prompt would add to the referenced ones: its blocks that are not
   * already held by a running sequence.
   */
  blocksNeeded(hashes: readonly number[], promptTokens: number): number {
    let shared = 0;
    while (shared < hashes.length && (this.refs.get(hashes[shared]!) ?? 0) > 0) shared++;
    return this.promptBlocks(promptTokens, hashes.length) - shared;
  }

  /**
   * Admits a prompt: its leading cached blocks are referenced (hits), the rest computed and
   * cached, evicting unreferenced blocks to make room. `tokenIds` are the ids `hashes` were made of.
   */
  allocate(hashes: readonly number[], tokenIds: readonly number[], promptTokens: number): KvAllocation {
    const matched = this.matchedBlocks(hashes);
    for (let i = 0; i < matched; i++) this.reference(hashes[i]!);
    const fresh = hashes.slice(matched);
    for (const hash of fresh) this.refs.set(hash, 1);
    const privateBlocks = this.promptBlocks(promptTokens, hashes.length) - hashes.length;
    this.referenced += fresh.length + privateBlocks;
    this.evictToFit();
    if (fresh.length > 0) {
      this.observer?.stored(
        fresh,
        matched === 0 ? null : hashes[matched - 1]!,
        tokenIds.slice(matched * this.blockSize, hashes.length * this.blockSize),
        this.blockSize,
      );
    }
    const hitTokens = matched * this.blockSize;
    this.queriesTokens += promptTokens;
    this.hitsTokens += hitTokens;
    return { hashes, privateBlocks, cachedTokens: hitTokens, released: false };
  }

  /** Grows an allocation to hold `generatedTokens` output tokens (one block per `blockSize`), evicting as needed. */
  grow(allocation: KvAllocation, promptTokens: number, generatedTokens: number): void {
    if (allocation.released) return;
    const total =
      this.promptBlocks(promptTokens + generatedTokens, allocation.hashes.length) - allocation.hashes.length;
    if (total <= allocation.privateBlocks) return;
    this.referenced += total - allocation.privateBlocks;
    allocation.privateBlocks = total;
    this.evictToFit();
  }

  /** Ends a sequence: its private blocks are freed, its cached ones enter the free queue (last block first). */
  release(allocation: KvAllocation): void {
    if (allocation.released) return;
    allocation.released = true;
    this.referenced -= allocation.privateBlocks;
    for (let i = allocation.hashes.length - 1; i >= 0; i--) {
      const hash = allocation.hashes[i]!;
      const refs = this.refs.get(hash);
      if (refs === undefined) continue;
      if (refs > 1) this.refs.set(hash, refs - 1);
      else {
        this.refs.set(hash, 0);
        this.free.set(hash, true);
        this.referenced--;
      }
    }
    // A batch that overfilled the cache (no preemption) leaves more free blocks than fit.
    this.evictToFit();
  }

  /** Drops every unreferenced cached block (vLLM's `reset_prefix_cache`, which refuses while requests run). */
  clear(): boolean {
    if (this.referenced > 0) return false;
    this.refs.clear();
    this.free.clear();
    this.observer?.cleared();
    return true;
  }

  private promptBlocks(tokens: number, fullBlocks: number): number {
    return Math.max(fullBlocks, Math.ceil(Math.max(1, tokens) / this.blockSize));
  }

  /** A cached block gains a reference; one that was free is in use again. */
  private reference(hash: number): void {
    const refs = this.refs.get(hash)!;
    if (refs === 0) {
      this.free.delete(hash);
      this.referenced++;
    }
    this.refs.set(hash, refs + 1);
  }

  private evictToFit(): void {
    const removed: number[] = [];
    while (this.referenced + this.free.size > this.numBlocks && this.free.size > 0) {
      const hash = this.free.keys().next().value!;
      this.free.delete(hash);
      this.refs.delete(hash);
      removed.push(hash);
    }
    if (removed.length > 0) {
      this.evictedBlocks += removed.length;
      this.observer?.removed(removed);
    }
  }
}
