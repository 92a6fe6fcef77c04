/**
 * Seeded pseudo-random numbers, so every draw the sim makes (lorem words, argument values,
 * invalid-argument and fault-rate decisions) is reproducible from a seed.
 */

/** A PRNG returning floats in [0, 1): mulberry32 over a 32-bit state. */
export type Random = () => number;

export function seededRandom(seed: number): Random {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Mixes two 32-bit integers into one seed (murmur3 finalizer), e.g. a seed and a request number. */
export function mixSeed(seed: number, salt: number): number {
  let h = Math.imul((seed ^ 0x9e3779b9) >>> 0, 0x85ebca6b) ^ salt;
  h = Math.imul(h ^ (h >>> 16), 0xc2b2ae35);
  return (h ^ (h >>> 13)) >>> 0;
}

/** An integer in [0, n). */
export function randomIndex(random: Random, n: number): number {
  return Math.floor(random() * n);
}
