/**
 * Which of the edge's prefix keys (proto `PrefixKey`) the backend's KV cache holds, and how many
 * leading tokens of each: the agent's half of cache-aware routing (docs/decisions/007).
 *
 * A key is mapped once (`mapped`): the chain of engine block hashes its prompt's leading full
 * blocks had in the cache then (`ResidentBlocks.cachedPrefix` of its token ids). From then on
 * only events move it: a `BlockRemoved` of a block in the chain cuts the chain there (the engine's
 * prefix match stops at the first missing block, so the blocks after it no longer count), and
 * `clear` (`AllBlocksCleared`, a resync) forgets every key. A key cut to nothing is forgotten.
 *
 * Changes accumulate until `takeReport` (the agent sends them coalesced as a `ResidencyReport`):
 * per key its latest cached-token count, 0 = gone; after `clear` the report says `reset`.
 *
 * Bounded: at most `maxPrefixes` keys, least recently mapped or asked about first out (reported
 * as gone). Memory per key: its chain (one block hash per block, shared strings) and one entry per
 * block in the block → keys index, ~100 bytes per block of a key.
 */

/** One key's residency change: cached tokens now, 0 = not resident. */
export interface PrefixChange {
  key: number;
  cachedTokens: number;
}

export interface ResidencyDelta {
  /** Forget every key reported before, then apply `prefixes`. */
  reset: boolean;
  prefixes: PrefixChange[];
}

interface Entry {
  /** Engine block hashes of the key's leading resident blocks, in prompt order. */
  chain: string[];
  /** Tokens per block. */
  blockSize: number;
  /** Blocks of the chain when it was mapped: fewer now means some were evicted. */
  mappedBlocks: number;
}

export class PrefixResidency {
  /** Key → entry; insertion order is recency (the first is the least recent). */
  private readonly entries = new Map<number, Entry>();
  /** Block hash → (key → the block's position in that key's chain). */
  private readonly holders = new Map<string, Map<number, number>>();
  private readonly pending = new Map<number, number>();
  private pendingReset = false;
  /** Keys dropped because `maxPrefixes` was reached. */
  evicted = 0;

  constructor(readonly maxPrefixes: number) {
    if (!Number.isSafeInteger(maxPrefixes) || maxPrefixes < 1)
      throw new RangeError(`maxPrefixes must be an integer >= 1, got ${maxPrefixes}`);
  }

  get size(): number {
    return this.entries.size;
  }

  /** Leading tokens of `key` the cache holds as far as the events tell, 0 when unknown or gone. */
  cachedTokens(key: number): number {
    const entry = this.entries.get(key);
    return entry === undefined ? 0 : entry.chain.length * entry.blockSize;
  }

  /**
   * Whether `key` should be (re)mapped: never mapped, or some of its blocks were evicted since
   * (the run that just ended stored them again). Marks it recently used.
   */
  needsMapping(key: number): boolean {
    const entry = this.entries.get(key);
    if (entry === undefined) return true;
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry.chain.length < entry.mappedBlocks;
  }

  /** Records `key`'s resident chain (`ResidentBlocks.cachedPrefix` of its tokens); empty = not resident. */
  mapped(key: number, chain: readonly string[], blockSize: number): void {
    const known = this.unlink(key);
    if (chain.length === 0) {
      if (known) this.note(key, 0);
      return;
    }
    const entry: Entry = { chain: [...chain], blockSize, mappedBlocks: chain.length };
    this.entries.set(key, entry);
    entry.chain.forEach((hash, position) => {
      let keys = this.holders.get(hash);
      if (keys === undefined) this.holders.set(hash, (keys = new Map()));
      if (!keys.has(key)) keys.set(key, position);
    });
    this.note(key, chain.length * blockSize);
    while (this.entries.size > this.maxPrefixes) {
      const oldest = this.entries.keys().next().value!;
      this.unlink(oldest);
      this.note(oldest, 0);
      this.evicted++;
    }
  }

  /** Blocks the engine removed: every key whose chain holds one is cut before it. */
  removed(hashes: readonly string[]): void {
    for (const hash of hashes) {
      const keys = this.holders.get(hash);
      if (keys === undefined) continue;
      for (const [key, position] of [...keys]) this.cut(key, position);
    }
  }

  /** The cache was cleared, or its state is unknown (a resync): every key is gone. */
  clear(): void {
    this.entries.clear();
    this.holders.clear();
    this.pending.clear();
    this.pendingReset = true;
  }

  /** Whether a change waits to be reported. */
  get changed(): boolean {
    return this.pendingReset || this.pending.size > 0;
  }

  /** The changes since the last call, at most `limit` keys (the rest stay for the next call); undefined when none. */
  takeReport(limit: number): ResidencyDelta | undefined {
    if (!this.changed) return undefined;
    const prefixes: PrefixChange[] = [];
    for (const [key, cachedTokens] of this.pending) {
      if (prefixes.length >= limit) break;
      prefixes.push({ key, cachedTokens });
      this.pending.delete(key);
    }
    const reset = this.pendingReset;
    this.pendingReset = false;
    return { reset, prefixes };
  }

  /**
   * The whole state as reports of at most `limit` keys each, the first one `reset` (for an edge that has just
   * registered this agent).
   */
  snapshot(limit: number): ResidencyDelta[] {
    const all = [...this.entries].map(([key, entry]) => ({ key, cachedTokens: entry.chain.length * entry.blockSize }));
    const reports: ResidencyDelta[] = [{ reset: true, prefixes: all.slice(0, limit) }];
    for (let from = limit; from < all.length; from += limit)
      reports.push({ reset: false, prefixes: all.slice(from, from + limit) });
    return reports;
  }

  private cut(key: number, position: number): void {
    const entry = this.entries.get(key);
    if (entry === undefined || position >= entry.chain.length) return;
    for (let index = position; index < entry.chain.length; index++) this.holders.get(entry.chain[index]!)?.delete(key);
    for (const hash of entry.chain.slice(position)) if (this.holders.get(hash)?.size === 0) this.holders.delete(hash);
    entry.chain.length = position;
    if (position === 0) this.entries.delete(key);
    this.note(key, position * entry.blockSize);
  }

  /** Forgets `key`'s chain; whether it had one. */
  private unlink(key: number): boolean {
    const entry = this.entries.get(key);
    if (entry === undefined) return false;
    this.entries.delete(key);
    for (const hash of entry.chain) {
      const keys = this.holders.get(hash);
      keys?.delete(key);
      if (keys?.size === 0) this.holders.delete(hash);
    }
    return true;
  }

  private note(key: number, cachedTokens: number): void {
    this.pending.set(key, cachedTokens);
  }
}
