/**
 * Test helper for the property "any split of an upstream stream into chunks gives the same
 * output": cuts a byte sequence at arbitrary offsets (as fast-check generates them).
 */

/**
 * Splits `bytes` at the given offsets. Offsets are taken modulo `length + 1`, deduplicated and
 * sorted, so any integers fast-check produces are valid; the slices are views (no copies).
 */
export function splitAt<T extends Uint8Array>(bytes: T, offsets: readonly number[]): T[] {
  const cuts = [...new Set(offsets.map((offset) => Math.abs(offset) % (bytes.length + 1)))].sort((a, b) => a - b);
  const slices: T[] = [];
  let start = 0;
  for (const cut of cuts) {
    slices.push(bytes.subarray(start, cut) as T);
    start = cut;
  }
  slices.push(bytes.subarray(start) as T);
  return slices;
}
