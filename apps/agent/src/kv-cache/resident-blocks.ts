/**
 * The blocks the backend's KV cache holds now, rebuilt from its KV events (kv-event-decoder.ts),
 * so the agent can tell how many leading tokens of a prompt the GPU would serve from cache
 * without knowing how the engine hashes blocks (vLLM hashes token ids with a per-process seed).
 *
 * Each `BlockStored` block is recorded under its parent's hash and the token ids it holds; a
 * prompt's token ids are then walked block by block from the root (`parent = null`): the first
 * block whose (parent, tokens) is not recorded ends the cached prefix, exactly as the engine's own
 * prefix match does. `BlockRemoved` forgets blocks, `AllBlocksCleared` all of them.
 *
 * Memory is bounded: at most `maxBlocks` blocks (the oldest recorded go first, counted in
 * `overflowed`; a real engine never holds more than its `num_gpu_blocks`, so the bound only bites
 * when it is set below that). Per block: two map entries and one record, ~200 bytes with integer
 * hashes, ~300 with 32-byte digests.
 */

/** 53-bit FNV-1a hash of a block's token ids (two 32-bit lanes). */
export function tokensHash(ids: readonly number[], from: number, to: number): number {
  let low = 0x811c9dc5;
  let high = 0x01000193;
  for (let i = from; i < to; i++) {
    const id = ids[i]!;
    low = Math.imul(low ^ (id & 0xffff), 0x01000193);
    low = Math.imul(low ^ (id >>> 16), 0x01000193);
    high = Math.imul(high ^ (id + 0x9e3779b9), 0x01000193);
  }
  return (high & 0x1fffff) * 0x100000000 + (low >>> 0);
}

interface Block {
  /** `${parent}|${tokensHash}`: the key of `byContent`. */
  contentKey: string;
}

export class ResidentBlocks {
  /** Block hash → record; insertion order is age (the first is the oldest). */
  private readonly byHash = new Map<string, Block>();
  /** `${parent hash or ''}|${tokens hash}` → block hash. */
  private readonly byContent = new Map<string, string>();
  /** The engine's block size, from its first `BlockStored`. */
  blockSize: number | undefined;
  /** Blocks dropped because `maxBlocks` was reached. */
  overflowed = 0;

  constructor(readonly maxBlocks: number) {
    if (!Number.isSafeInteger(maxBlocks) || maxBlocks < 1)
      throw new RangeError(`maxBlocks must be an integer >= 1, got ${maxBlocks}`);
  }

  get size(): number {
    return this.byHash.size;
  }

  has(hash: string): boolean {
    return this.byHash.has(hash);
  }

  /**
   * Records blocks stored in prompt order: `hashes[i]`'s parent is `hashes[i - 1]` (the first's is
   * `parent`) and it holds `tokenIds[i × blockSize, (i + 1) × blockSize)`.
   */
  stored(hashes: readonly string[], parent: string | null, tokenIds: readonly number[], blockSize: number): void {
    if (this.blockSize === undefined) this.blockSize = blockSize;
    // A block size that changed means another engine configuration: what was recorded no longer matches.
    if (blockSize !== this.blockSize) {
      this.clear();
      this.blockSize = blockSize;
    }
    let previous = parent;
    for (let i = 0; i < hashes.length; i++) {
      const hash = hashes[i]!;
      const contentKey = `${previous ?? ''}|${tokensHash(tokenIds, i * blockSize, (i + 1) * blockSize)}`;
      this.forget(hash);
      this.byHash.set(hash, { contentKey });
      this.byContent.set(contentKey, hash);
      previous = hash;
    }
    while (this.byHash.size > this.maxBlocks) {
      this.forget(this.byHash.keys().next().value!);
      this.overflowed++;
    }
  }

  removed(hashes: readonly string[]): void {
    for (const hash of hashes) this.forget(hash);
  }

  clear(): void {
    this.byHash.clear();
    this.byContent.clear();
  }

  /**
   * The hashes of the leading full blocks of `tokenIds` that the cache holds, in order (empty when
   * no block size is known yet).
   */
  cachedPrefix(tokenIds: readonly number[]): string[] {
    const blockSize = this.blockSize;
    const chain: string[] = [];
    if (blockSize === undefined) return chain;
    let parent = '';
    for (let end = blockSize; end <= tokenIds.length; end += blockSize) {
      const hash = this.byContent.get(`${parent}|${tokensHash(tokenIds, end - blockSize, end)}`);
      if (hash === undefined) break;
      chain.push(hash);
      parent = hash;
    }
    return chain;
  }

  private forget(hash: string): void {
    const block = this.byHash.get(hash);
    if (block === undefined) return;
    this.byHash.delete(hash);
    if (this.byContent.get(block.contentKey) === hash) this.byContent.delete(block.contentKey);
  }
}
