/**
 * Finds the token usage in a backend response body without parsing the whole stream.
 *
 * - SSE bodies (`text/event-stream`): each body slice is searched (natively, `Buffer.indexOf`) for
 *   the bytes `"usage":` followed by `{` (or ` {`); only the SSE `data:` line holding a match is
 *   JSON-parsed. `"usage":null` (OpenAI Chat streams with `include_usage`, docs/protocols.md "Chat stream") never
 *   matches, so ordinary chunks cost one search each. A match split across slices is found
 *   through a tail of the last bytes seen, searched only when the tail holds a `"` (a match's
 *   first byte). The last usage found wins (vLLM `continuous_usage_stats` puts usage on every
 *   chunk).
 * - JSON bodies (`application/json`): slices are kept (by reference) and parsed once at the end,
 *   up to `maxJsonBytes`.
 *
 * The usage object is read by `chatUsageOf` (chat-usage.ts): a count the backend did not report stays undefined,
 * never 0.
 */
import type { Usage } from '@iop/core';
import { chatUsageOfJson } from './chat-usage.js';

export type UsageBodyKind = 'sse' | 'json' | 'none';

const PATTERNS = [Buffer.from('"usage":{'), Buffer.from('"usage": {')];
/** What every pattern starts with: the one native search per slice. */
const KEY = Buffer.from('"usage":');
const TAIL_BYTES = Math.max(...PATTERNS.map((pattern) => pattern.length)) - 1;
const LF = 0x0a;
const QUOTE = 0x22;
const SPACE = 0x20;
const OPEN_BRACE = 0x7b;
/** A data line longer than this is not captured (1 MiB). */
const MAX_LINE_BYTES = 1 << 20;

/** The body kind for a response `content-type`. */
export function usageBodyKindOf(contentType: string | undefined): UsageBodyKind {
  if (contentType === undefined) return 'none';
  const type = contentType.toLowerCase();
  if (type.startsWith('text/event-stream')) return 'sse';
  if (type.startsWith('application/json') || /^application\/[^;]*\+json/.test(type)) return 'json';
  return 'none';
}

export class UsageScanner {
  private usage: Usage | undefined;
  /** Slices of the current, unfinished line: `pending[0]` counts from `pendingStart`. */
  private readonly pending: Buffer[] = [];
  private pendingStart = 0;
  private pendingBytes = 0;
  /** Inside a line that holds a match, waiting for its end. */
  private capturing = false;
  /** The last TAIL_BYTES bytes of the stream, for matches split across slices. */
  private readonly tail = Buffer.alloc(TAIL_BYTES);
  private tailLength = 0;
  private readonly scratch = Buffer.alloc(TAIL_BYTES * 2);
  private jsonBytes = 0;

  constructor(
    private readonly kind: UsageBodyKind,
    private readonly maxJsonBytes = 8 << 20,
  ) {}

  /** Feeds one body slice, as it goes to the edge. */
  push(chunk: Uint8Array): void {
    if (chunk.length === 0 || this.kind === 'none') return;
    const slice = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    if (this.kind === 'json') {
      this.jsonBytes += slice.length;
      if (this.jsonBytes <= this.maxJsonBytes) this.pending.push(slice);
      return;
    }
    this.scanSse(slice);
  }

  /** The usage found, after the last slice; undefined when the body carried none. */
  finish(): Usage | undefined {
    if (this.kind === 'json' && this.jsonBytes <= this.maxJsonBytes && this.pending.length > 0) {
      const text = Buffer.concat(this.pending).toString('utf8');
      this.pending.length = 0;
      this.usage = chatUsageOfJson(text) ?? this.usage;
    } else if (this.kind === 'sse' && this.capturing) {
      this.completeLine(undefined, 0); // a last line without LF
    }
    return this.usage;
  }

  private scanSse(slice: Buffer): void {
    let from = 0;
    if (this.capturing) {
      const end = slice.indexOf(LF);
      if (end < 0) {
        this.keepPending(slice);
        this.updateTail(slice);
        return;
      }
      this.completeLine(slice, end);
      from = end + 1;
    } else if (this.tailHasQuote()) {
      const split = this.splitMatch(slice);
      if (split >= 0) from = this.onMatch(slice, 0, split);
    }
    while (from < slice.length) {
      const match = indexOfPattern(slice, from);
      if (match < 0) break;
      const next = this.onMatch(slice, match, -1);
      if (next < 0) break;
      from = next;
    }
    if (!this.capturing) {
      const lastLf = slice.lastIndexOf(LF);
      if (lastLf >= 0) {
        this.pending.length = 0;
        this.pendingBytes = 0;
        this.pendingStart = lastLf + 1;
        this.pending.push(slice);
      } else {
        this.keepPending(slice);
      }
    }
    this.updateTail(slice);
  }

  /**
   * A match at `match` in `slice` (or, with `splitLength >= 0`, one that started in earlier
   * slices and ends `splitLength` bytes into this one). Parses its line when it ends in this
   * slice and returns the offset after it; otherwise starts capturing and returns -1.
   */
  private onMatch(slice: Buffer, match: number, splitLength: number): number {
    const searchFrom = splitLength >= 0 ? splitLength : match;
    const end = slice.indexOf(LF, searchFrom);
    const lineStart = splitLength >= 0 ? -1 : slice.lastIndexOf(LF, match);
    if (lineStart >= 0) {
      // The line starts inside this slice.
      if (end >= 0) {
        this.parseLine(slice.subarray(lineStart + 1, end));
        return end + 1;
      }
      this.pending.length = 0;
      this.pendingBytes = 0;
      this.pendingStart = lineStart + 1;
      this.pending.push(slice);
      this.capturing = true;
      return -1;
    }
    // The line started in an earlier slice (kept in `pending`).
    if (end >= 0) {
      this.completeLine(slice, end);
      return end + 1;
    }
    this.keepPending(slice);
    this.capturing = true;
    return -1;
  }

  /** Ends a captured line at `end` in `slice` (or at the end of input when `slice` is undefined). */
  private completeLine(slice: Buffer | undefined, end: number): void {
    const parts = this.pending.slice();
    if (parts.length > 0) parts[0] = parts[0]!.subarray(this.pendingStart);
    if (slice !== undefined) parts.push(slice.subarray(0, end));
    this.capturing = false;
    this.pending.length = 0;
    this.pendingBytes = 0;
    this.pendingStart = 0;
    this.parseLine(Buffer.concat(parts));
  }

  private keepPending(slice: Buffer): void {
    if (this.pending.length === 0) this.pendingStart = 0;
    this.pendingBytes += slice.length;
    if (this.pendingBytes > MAX_LINE_BYTES) {
      this.pending.length = 0;
      this.pendingBytes = 0;
      this.capturing = false;
      return;
    }
    this.pending.push(slice);
  }

  /** Searches tail + head of `slice` for a match that straddles them; returns its end offset in `slice`, or -1. */
  private splitMatch(slice: Buffer): number {
    const headLength = Math.min(TAIL_BYTES, slice.length);
    this.tail.copy(this.scratch, 0, 0, this.tailLength);
    slice.copy(this.scratch, this.tailLength, 0, headLength);
    this.scratch.fill(0, this.tailLength + headLength);
    for (const pattern of PATTERNS) {
      const at = this.scratch.indexOf(pattern);
      if (at >= 0 && at < this.tailLength && at + pattern.length > this.tailLength) {
        return at + pattern.length - this.tailLength;
      }
    }
    return -1;
  }

  /** Whether the tail holds a `"`: without one, no pattern can straddle it and the next slice. */
  private tailHasQuote(): boolean {
    const tail = this.tail;
    for (let index = 0; index < this.tailLength; index++) if (tail[index] === QUOTE) return true;
    return false;
  }

  private updateTail(slice: Buffer): void {
    if (slice.length >= TAIL_BYTES) {
      // A byte loop: for these few bytes cheaper than a native `copy` call.
      const tail = this.tail;
      for (let index = 0, from = slice.length - TAIL_BYTES; index < TAIL_BYTES; index++)
        tail[index] = slice[from + index]!;
      this.tailLength = TAIL_BYTES;
      return;
    }
    const keep = Math.min(this.tailLength, TAIL_BYTES - slice.length);
    this.tail.copy(this.tail, 0, this.tailLength - keep, this.tailLength);
    slice.copy(this.tail, keep);
    this.tailLength = keep + slice.length;
  }

  private parseLine(line: Buffer): void {
    let text = line.toString('utf8');
    if (text.startsWith('data:')) text = text.slice(text.charCodeAt(5) === 0x20 ? 6 : 5);
    this.usage = chatUsageOfJson(text) ?? this.usage;
  }
}

/**
 * The first whole match of a pattern (`"usage":{` or `"usage": {`) in `slice` from `from`, or -1.
 * One that this slice ends inside is found with the next slice (`splitMatch`).
 */
function indexOfPattern(slice: Buffer, from: number): number {
  for (let at = slice.indexOf(KEY, from); at >= 0; at = slice.indexOf(KEY, at + 1)) {
    let next = at + KEY.length;
    if (slice[next] === SPACE) next++;
    if (slice[next] === OPEN_BRACE) return at;
  }
  return -1;
}
