/**
 * A small seeded pseudo-random generator (mulberry32 over a 32-bit state), for what must draw the
 * same values on every run: routing tests, benchmark and soak workloads.
 * @returns a function giving floats in [0, 1)
 */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
