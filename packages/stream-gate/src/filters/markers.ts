/** Marker matching over streamed text, where a marker (`<think>`, `<tool_call>`) may be split across chunks. */

/**
 * Length of the longest suffix of `text` that is a proper prefix of `marker` (0 when none): the
 * tail that must be held because the next chunk may complete the marker.
 */
export function partialMarkerLength(text: string, marker: string): number {
  const max = Math.min(text.length, marker.length - 1);
  for (let length = max; length > 0; length--) {
    if (text.endsWith(marker.slice(0, length))) return length;
  }
  return 0;
}

/** Whether `text` is all whitespace (or empty). */
export function isBlank(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code !== 32 && code !== 10 && code !== 13 && code !== 9) return false;
  }
  return true;
}
