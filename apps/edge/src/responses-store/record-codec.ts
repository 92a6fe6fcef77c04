/**
 * How a `StoredResponse` is kept as text: JSON in which every long string is written once. A
 * record repeats its input (the input items, and the same text again in the resolved
 * conversation) and its output (the Response object, and the conversation's assistant turn); a
 * 24 MiB input stored as plain JSON was a 50 MB row. Here the second and later occurrences of a
 * string of at least `MIN_SHARED_LENGTH` characters become a reference to the first.
 *
 * Format: `iop-record-1:` followed by JSON. A reference is the string `"\u0000<n>"` (the n-th long
 * string of the document, counted in document order, 0-based); a real string that starts with
 * U+0000 is written with one more U+0000 in front. Text that does not start with the prefix is a
 * row from before this format: plain JSON, read as it is.
 */
import type { StoredResponse } from './store.js';

/** Strings shorter than this are written as they are (a reference would not save enough), characters. */
export const MIN_SHARED_LENGTH = 256;
const PREFIX = 'iop-record-1:';
const MARK = '\u0000';

function escape(value: string): string {
  return value.startsWith(MARK) ? MARK + value : value;
}

/**
 * The record with its strings already in stored form (escaped; repeats of long strings replaced by
 * references), as a plain tree: `encodeShared` turns it into the stored text with a plain
 * `JSON.stringify`. Cheap (one walk, no serialization), and each long string appears in it once,
 * so it is also what crosses to the store's worker thread (a structured clone copies every
 * occurrence of a string). Walks in `JSON.stringify` order (own keys in order, array indexes).
 */
export type SharedRecord = { readonly shared: unique symbol };

export function shareRecord(record: StoredResponse): SharedRecord {
  const seen = new Map<string, number>();
  const visit = (value: unknown): unknown => {
    if (typeof value === 'string') {
      if (value.length < MIN_SHARED_LENGTH) return escape(value);
      const index = seen.get(value);
      if (index !== undefined) return MARK + String(index);
      seen.set(value, seen.size);
      return escape(value);
    }
    if (Array.isArray(value)) return value.map(visit);
    if (typeof value !== 'object' || value === null) return value;
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) {
      if (key === '__proto__')
        Object.defineProperty(out, key, { value: visit(item), enumerable: true, writable: true, configurable: true });
      else out[key] = visit(item);
    }
    return out;
  };
  return visit(record) as SharedRecord;
}

/** The stored text of a `shareRecord` tree. */
export function encodeShared(shared: SharedRecord): string {
  return PREFIX + JSON.stringify(shared);
}

/** The record as stored text (see the module comment). */
export function encodeRecord(record: StoredResponse): string {
  return encodeShared(shareRecord(record));
}

/**
 * The record `encodeRecord` wrote (or a plain-JSON row from before the format).
 * @throws SyntaxError when the text is not valid JSON; RangeError for a reference to no string.
 */
export function decodeRecord(text: string): StoredResponse {
  if (!text.startsWith(PREFIX)) return JSON.parse(text) as StoredResponse;
  const shared: string[] = [];
  return JSON.parse(text.slice(PREFIX.length), (_key, value: unknown) => {
    if (typeof value !== 'string' || value.length === 0) return value;
    if (value.startsWith(MARK)) {
      if (value.startsWith(MARK, 1)) value = value.slice(1);
      else {
        const target = shared[Number(value.slice(1))];
        if (target === undefined) throw new RangeError(`stored record refers to unknown string ${value.slice(1)}`);
        return target;
      }
    }
    const text = value as string;
    if (text.length >= MIN_SHARED_LENGTH) shared.push(text);
    return text;
  }) as StoredResponse;
}
