/**
 * Prefix affinity: requests that share a prompt prefix go to the same provider, whose backend
 * still holds that prefix in its KV cache (vLLM automatic prefix caching, SGLang RadixAttention,
 * llama.cpp `cache_prompt`), so the prefill is skipped. Two parts:
 *
 * - `affinityKey(request, prefixMessages)`: a uint32 key. The Responses `prompt_cache_key`
 *   (`promptCacheKey`) when given, else a hash of the leading messages: at most `prefixMessages`
 *   of them, stopping before the first assistant turn, so turn 1 and turn k of one conversation
 *   get the same key (`[system, user₁]` for both `[system, user₁]` and `[system, user₁,
 *   assistant₁, user₂]`). The hash is FNV-1a (32-bit) over the messages' roles and string
 *   fields (the first 64 Ki characters of each, and its length), walked in place (no JSON copy of a
 *   large system prompt), then the murmur3 finalizer
 *   so near-identical prefixes land far apart on the ring.
 * - `PrefixAffinity.pick(key, candidates)`: consistent hashing with bounded loads (Mirrokni,
 *   Thorup, Zadimoghaddam, "Consistent Hashing with Bounded Loads", SODA 2018; the algorithm
 *   behind HAProxy `hash-balance-factor` and Vimeo's use of it). Each provider owns
 *   `virtualNodes × weight` points on a 32-bit ring; a key starts at its point and walks
 *   clockwise, skipping providers that are not eligible or whose load would exceed
 *   `loadFactor × average`: provider i accepts while `load_i < ⌈loadFactor × (L + 1) × cap_i / C⌉`,
 *   load = inFlight + queued, cap = maxConcurrency × weight, L and C summed over the eligible
 *   providers (the `+ 1` counts the request being placed). Some provider always passes the bound,
 *   so a hot key spills to its ring successors instead of overloading one GPU host. A provider
 *   joining moves about 1/N of the keys, all to the newcomer.
 *
 * Stickiness and hit accounting: `observe(key, providerId)` remembers (LRU, at most
 * `maxTrackedKeys` keys) which provider last served each key; `pick` keeps a key there while that
 * provider is eligible and within the bound (a session that spilled stays where it spilled to), and
 * a request counts as warm when it lands there again, cold when it lands elsewhere; first-seen keys
 * count as neither. `stats().warmShare` is warm / (warm + cold).
 *
 * One `PrefixAffinity` per model group: the ring is rebuilt only when the group's membership
 * (the set of candidate ids) changes; availability changes only make providers skipped.
 */
import type { InferenceRequest, Message } from '@iop/core';
import { fmix32 as finalize } from './fmix32.js';
import { isEligible, type PickOptions } from './p2c.js';
import type { RoutedProvider } from './provider.js';

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

/**
 * Characters of one string fed to the hash, at most: its first 64 Ki and its length. Two
 * strings that agree that far share that long a prefix, which is what the key is for, and a
 * 30 MB prompt no longer costs half a second of the event loop (it did, for every such request).
 */
const FEED_MAX_CHARS = 64 * 1024;

function feed(hash: number, text: string): number {
  let h = hash;
  const end = Math.min(text.length, FEED_MAX_CHARS);
  for (let i = 0; i < end; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, FNV_PRIME);
  }
  // Length terminator: "ab"+"c" and "a"+"bc" hash differently.
  h ^= text.length & 0xffff;
  return Math.imul(h, FNV_PRIME);
}

/** FNV-1a + fmix32 of a string, uint32. */
export function hashString(text: string): number {
  return finalize(feed(FNV_OFFSET, text));
}

function feedMessage(hash: number, message: Message): number {
  let h = feed(hash, message.role);
  if (message.role === 'tool') h = feed(h, message.toolCallId);
  for (const part of message.content) {
    h = feed(h, part.type);
    switch (part.type) {
      case 'text':
      case 'reasoning':
        h = feed(h, part.text);
        break;
      case 'image':
        h = feed(h, part.url);
        break;
      case 'file':
        h = feed(h, part.data);
        break;
      case 'tool-call':
        h = feed(feed(feed(h, part.id), part.name), part.arguments);
        break;
    }
  }
  return h;
}

/**
 * The affinity key of a request, uint32 (see the module doc).
 * @param prefixMessages how many leading messages to hash (≥ 1; default config 2 = system + first user turn).
 */
export function affinityKey(request: InferenceRequest, prefixMessages: number): number {
  if (request.promptCacheKey !== undefined && request.promptCacheKey !== '')
    return hashString(`k:${request.promptCacheKey}`);
  let hash = FNV_OFFSET;
  const count = Math.min(prefixMessages, request.messages.length);
  for (let i = 0; i < count; i++) {
    const message = request.messages[i]!;
    if (message.role === 'assistant' && i > 0) break;
    hash = feedMessage(hash, message);
  }
  return finalize(hash);
}

/**
 * The affinity key of a raw OpenAI Chat body (the passthrough path: the JSON the edge already
 * parsed, walked in place). Same rules as `affinityKey`: `prompt_cache_key` when given, else the
 * leading messages up to the first assistant turn. A text message hashes as it does through the
 * hub (`role`, `text`, its text), so a plain conversation keeps its key on either path.
 */
export function chatAffinityKey(body: Record<string, unknown>, prefixMessages: number): number {
  const cacheKey = body.prompt_cache_key;
  if (typeof cacheKey === 'string' && cacheKey !== '') return hashString(`k:${cacheKey}`);
  const messages = Array.isArray(body.messages) ? (body.messages as unknown[]) : [];
  let hash = FNV_OFFSET;
  const count = Math.min(prefixMessages, messages.length);
  for (let i = 0; i < count; i++) {
    const message = messages[i] as Record<string, unknown> | null;
    if (typeof message !== 'object' || message === null) continue;
    const role = typeof message.role === 'string' ? message.role : '';
    if (role === 'assistant' && i > 0) break;
    hash = feed(hash, role === 'developer' ? 'system' : role);
    if (typeof message.tool_call_id === 'string') hash = feed(hash, message.tool_call_id);
    const content = message.content;
    if (typeof content === 'string') hash = feed(feed(hash, 'text'), content);
    else if (Array.isArray(content)) {
      for (const part of content as Array<Record<string, unknown> | null>) {
        if (typeof part !== 'object' || part === null) continue;
        hash = feed(hash, String(part.type));
        if (typeof part.text === 'string') hash = feed(hash, part.text);
        const url = (part.image_url as { url?: unknown } | undefined)?.url;
        if (typeof url === 'string') hash = feed(hash, url);
      }
    }
  }
  return finalize(hash);
}

export interface PrefixAffinityOptions {
  /** Ring points per provider of weight 1 (default 100; more = smoother split, larger ring). */
  virtualNodes?: number;
  /** Bound c ≥ 1 on a provider's load relative to the average (default 1.25, the paper's ε = 0.25). */
  loadFactor?: number;
  /** Keys remembered for hit accounting (default 10 000). */
  maxTrackedKeys?: number;
}

export interface AffinityStats {
  /** Requests that landed on the provider that served their key before. */
  warm: number;
  /** Requests whose key was served elsewhere before. */
  cold: number;
  /** warm / (warm + cold), 0 when nothing was counted. */
  warmShare: number;
}

interface Ring {
  /** Sorted ring positions. */
  points: Uint32Array;
  /** Owner (index into `ids`) of each point. */
  owners: Uint16Array;
  ids: string[];
  members: Set<string>;
}

export class PrefixAffinity {
  readonly virtualNodes: number;
  readonly loadFactor: number;
  private readonly maxTrackedKeys: number;
  private ring: Ring | undefined;
  private readonly lastServer = new Map<number, string>();
  private warm = 0;
  private cold = 0;

  constructor(options: PrefixAffinityOptions = {}) {
    this.virtualNodes = options.virtualNodes ?? 100;
    this.loadFactor = options.loadFactor ?? 1.25;
    this.maxTrackedKeys = options.maxTrackedKeys ?? 10_000;
    if (!(this.loadFactor >= 1)) throw new RangeError(`loadFactor must be ≥ 1, got ${this.loadFactor}`);
    if (!(this.virtualNodes >= 1)) throw new RangeError(`virtualNodes must be ≥ 1, got ${this.virtualNodes}`);
  }

  /**
   * The provider for `key`: the provider that served it last (`observe`) while it is eligible and
   * within the bound — a conversation stays where its history's KV cache is, also after it spilled
   * off its ring owner, instead of being re-decided on every turn —, else the first eligible
   * provider clockwise from the key whose load is within the bound; undefined when no candidate is
   * eligible. `options` filters as in P2C (exclude, requireLabels, allow).
   */
  pick<P extends RoutedProvider>(key: number, candidates: readonly P[], options?: PickOptions): P | undefined {
    if (candidates.length === 0) return undefined;
    const ring = this.ringFor(candidates);
    const byId = new Map<string, P>();
    let totalLoad = 0;
    let totalCapacity = 0;
    for (const provider of candidates) {
      if (!isEligible(provider, options)) continue;
      byId.set(provider.id, provider);
      totalLoad += provider.inFlight + provider.load.queued;
      totalCapacity += provider.maxConcurrency * provider.weight;
    }
    if (byId.size === 0) return undefined;
    const within = (provider: P) =>
      provider.inFlight + provider.load.queued <
      Math.ceil((this.loadFactor * (totalLoad + 1) * provider.maxConcurrency * provider.weight) / totalCapacity);
    const last = this.lastServer.get(key);
    const home = last === undefined ? undefined : byId.get(last);
    if (home !== undefined && within(home)) return home;
    const visited = new Set<number>();
    const { points, owners } = ring;
    let index = lowerBound(points, key >>> 0);
    for (let step = 0; step < points.length && visited.size < ring.ids.length; step++, index++) {
      if (index === points.length) index = 0;
      const owner = owners[index]!;
      if (visited.has(owner)) continue;
      visited.add(owner);
      const provider = byId.get(ring.ids[owner]!);
      if (provider !== undefined && within(provider)) return provider;
    }
    // Unreachable while loadFactor ≥ 1 (the bounds sum to more than L); kept as a safe answer.
    return byId.values().next().value;
  }

  /**
   * Records that `providerId` served `key`; returns `warm` (same provider as last time), `cold`
   * (another one) or `new` (key not seen, or forgotten).
   */
  observe(key: number, providerId: string): 'warm' | 'cold' | 'new' {
    const previous = this.lastServer.get(key);
    if (previous !== undefined) this.lastServer.delete(key);
    else if (this.lastServer.size >= this.maxTrackedKeys) {
      const oldest = this.lastServer.keys().next().value;
      if (oldest !== undefined) this.lastServer.delete(oldest);
    }
    this.lastServer.set(key, providerId);
    if (previous === undefined) return 'new';
    const warm = previous === providerId;
    this.recordHit(warm);
    return warm ? 'warm' : 'cold';
  }

  /** Counts one request as warm (landed where its prefix was served before) or cold. */
  recordHit(warm: boolean): void {
    if (warm) this.warm++;
    else this.cold++;
  }

  stats(): AffinityStats {
    const total = this.warm + this.cold;
    return { warm: this.warm, cold: this.cold, warmShare: total === 0 ? 0 : this.warm / total };
  }

  private ringFor(candidates: readonly RoutedProvider[]): Ring {
    const current = this.ring;
    if (
      current !== undefined &&
      current.members.size === candidates.length &&
      candidates.every((p) => current.members.has(p.id))
    )
      return current;
    const ids = candidates.map((p) => p.id).sort();
    const pointsPerId = candidates.map((p) => Math.max(1, Math.round(this.virtualNodes * p.weight)));
    const weightOf = new Map(candidates.map((p, i) => [p.id, pointsPerId[i]!]));
    const entries: Array<[number, number]> = [];
    ids.forEach((id, owner) => {
      const count = weightOf.get(id)!;
      for (let v = 0; v < count; v++) entries.push([hashString(`${id}#${v}`), owner]);
    });
    entries.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    const ring: Ring = {
      points: Uint32Array.from(entries, (entry) => entry[0]),
      owners: Uint16Array.from(entries, (entry) => entry[1]),
      ids,
      members: new Set(ids),
    };
    this.ring = ring;
    return ring;
  }
}

/** First index whose point is ≥ value (points.length when none). */
function lowerBound(points: Uint32Array, value: number): number {
  let low = 0;
  let high = points.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (points[middle]! < value) low = middle + 1;
    else high = middle;
  }
  return low;
}
