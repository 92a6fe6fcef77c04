/**
 * murmur3's fmix32 (Austin Appleby, MurmurHash3 `fmix32`): full avalanche over a 32-bit hash state, uint32. The final
 * step of the prefix-affinity key (prefix-affinity.ts) and of the prefix keys (prefix-keys.ts) over their FNV-1a state.
 */
export function fmix32(hash: number): number {
  let h = hash;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}
