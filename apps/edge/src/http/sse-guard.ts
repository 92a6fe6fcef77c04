/**
 * Makes a relayed Chat Completions SSE stream (passthrough path) spec-conformant whatever the
 * backend's framing (PROTOCOLS A.4, A.5; the SSE event-stream format of the WHATWG HTML standard,
 * §9.2.6), while ordinary chunks pass as the backend's own bytes:
 *
 * - Events are split at blank lines (LF or CRLF line ends). An event whose data spans several
 *   `data:` lines (valid SSE: the lines are joined with `\n`) is parsed and re-sent on one line.
 * - A one-line `data:` event must carry `[DONE]` or a JSON object (first byte `{`, last byte `}`);
 *   anything else is a malformed chunk: the stream ends there as a failure.
 * - Each one-line event is searched natively (`Buffer.indexOf`) for the keys `"usage"`,
 *   `"error"` and `"finish_reason"`; only a chunk whose `usage` or `error` value is not `null`
 *   is JSON-parsed and handed to `ChunkRules` (usage and error rules). A non-null
 *   `finish_reason` marks the answer finished: a stream cut after it is complete, and gets its
 *   usage chunk and `[DONE]` from `end()`.
 * - Nothing after `[DONE]` is sent.
 *
 * Built on bytes rather than on eventsource-parser (which iop's normalized path uses): this path
 * must send the backend's bytes unchanged and uncopied, and a string parser would decode and
 * re-encode every chunk.
 *
 * Only complete events are passed on: a frame that ends mid-event holds that part until the next
 * frame (backends write an event per write, so this costs no latency in practice).
 */
import { IopError, SSE_DONE } from '@iop/core';
import { ChunkRules } from './chunk-rules.js';

const NEWLINE = 0x0a;
const CR = 0x0d;
const SPACE = 0x20;
const TAB = 0x09;
const COLON = 0x3a;
const QUOTE = 0x22;
const OPEN = 0x7b;
const CLOSE = 0x7d;
const LOWER_N = 0x6e;
const DATA = Buffer.from('data:');
const EVENT = Buffer.from('event:');
const DONE = Buffer.from('[DONE]');
const DONE_EVENT = Buffer.from(SSE_DONE);
const USAGE_KEY = Buffer.from('"usage"');
const ERROR_KEY = Buffer.from('"error"');
const FINISH_KEY = Buffer.from('"finish_reason"');
const EMPTY = Buffer.alloc(0);

export interface GuardResult {
  /** Bytes to send now: complete events, up to (not including) a failing one. */
  safe: Buffer;
  /** The stream must end here (malformed chunk or backend error chunk): send `safe`, then this as an in-band error. */
  failure: IopError | undefined;
}

function malformed(): IopError {
  return new IopError('upstream_error', 'upstream failure: the backend sent a malformed stream chunk');
}

/** Whether `data[start..end)` begins with `prefix`. */
function startsWith(data: Buffer, start: number, end: number, prefix: Buffer): boolean {
  return end - start >= prefix.length && data.compare(prefix, 0, prefix.length, start, start + prefix.length) === 0;
}

/**
 * Finds key values in one buffer, each key's next occurrence remembered, so that searching every
 * line of a frame for a key it rarely holds costs one pass over the frame, not one per line.
 */
class KeyFinder {
  private readonly next: number[];

  constructor(
    private readonly data: Buffer,
    private readonly keys: readonly Buffer[],
  ) {
    this.next = keys.map(() => -2); // -2: not searched yet; -1: none left in the buffer
  }

  /**
   * Where the value of key `k` starts in `data[from..to)`, for its first occurrence followed by a
   * colon; -1 when there is none. (A JSON string cannot hold an unescaped `"`, so a match followed
   * by a colon is a key.)
   */
  valueAfter(k: number, from: number, to: number): number {
    const { data } = this;
    const key = this.keys[k]!;
    for (;;) {
      let at = this.next[k]!;
      if (at === -2 || (at !== -1 && at < from)) at = this.next[k] = data.indexOf(key, from);
      if (at === -1 || at >= to) return -1;
      this.next[k] = -2;
      let i = at + key.length;
      from = at + 1;
      while (i < to && (data[i] === SPACE || data[i] === TAB)) i++;
      if (data[i] !== COLON) continue;
      i++;
      while (i < to && (data[i] === SPACE || data[i] === TAB)) i++;
      return i < to ? i : -1;
    }
  }
}

const KEYS = [FINISH_KEY, USAGE_KEY, ERROR_KEY];
const FINISH = 0;
const USAGE = 1;
const ERROR = 2;

export class SseGuard {
  private partial: Buffer | undefined;
  private readonly rules: ChunkRules;
  /** `data: [DONE]` has passed: nothing more is sent. */
  sawDone = false;
  /** A chunk with a non-null `finish_reason` has passed. */
  sawFinish = false;
  // The event being scanned: its data lines as [from, to) ranges of the current buffer.
  private dataFrom: number[] = [];
  private dataTo: number[] = [];
  private errorEvent = false;

  constructor(options: { includeUsage: boolean }) {
    this.rules = new ChunkRules(options.includeUsage);
  }

  push(chunk: Uint8Array): GuardResult {
    if (this.sawDone) return { safe: EMPTY, failure: undefined };
    const data = this.partial === undefined ? Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength) : Buffer.concat([this.partial, chunk]);
    this.partial = undefined;
    return this.scan(data, false);
  }

  /**
   * The end of the backend's stream: a last event without its blank line is taken as complete;
   * a finished answer without `[DONE]` gets its usage chunk and `[DONE]`.
   * @returns the bytes to send, and whether the stream was complete (finished or `[DONE]`).
   */
  end(): { safe: Buffer; failure: IopError | undefined; complete: boolean } {
    let result: GuardResult = { safe: EMPTY, failure: undefined };
    if (!this.sawDone && this.partial !== undefined) {
      const rest = this.partial;
      this.partial = undefined;
      result = this.scan(rest, true);
    }
    if (result.failure !== undefined || this.sawDone) return { ...result, complete: this.sawDone };
    if (!this.sawFinish) return { ...result, complete: false };
    this.sawDone = true;
    const usage = this.rules.takeUsage();
    return { safe: Buffer.concat(usage === undefined ? [result.safe, DONE_EVENT] : [result.safe, usage, DONE_EVENT]), failure: undefined, complete: true };
  }

  /** Scans whole events of `data`; `final`: the buffer is the stream's last bytes (an unterminated event counts). */
  private scan(data: Buffer, final: boolean): GuardResult {
    let parts: Buffer[] | undefined;
    let emitFrom = 0;
    let eventStart = 0;
    let start = 0;
    const keys = new KeyFinder(data, KEYS);
    this.resetEvent();
    for (;;) {
      let end = data.indexOf(NEWLINE, start);
      const last = end === -1;
      if (last) {
        if (!final) break;
        end = data.length;
      }
      let lineEnd = end;
      if (lineEnd > start && data[lineEnd - 1] === CR) lineEnd--;
      const next = last ? data.length : end + 1;
      if (lineEnd === start || (last && start < end)) {
        if (last && lineEnd > start) this.addLine(data, start, lineEnd);
        // Blank line (or the stream's end): the event is complete.
        if (this.dataFrom.length > 0) {
          const outcome = this.dispatch(data, keys);
          if (outcome === 'fail' || outcome instanceof IopError) {
            const safe = parts === undefined ? data.subarray(emitFrom, eventStart) : Buffer.concat([...parts, data.subarray(emitFrom, eventStart)]);
            this.partial = undefined;
            return { safe, failure: outcome === 'fail' ? malformed() : outcome };
          }
          if (outcome !== 'original') {
            parts ??= [];
            parts.push(data.subarray(emitFrom, eventStart));
            if (outcome !== 'none') parts.push(...outcome);
            emitFrom = next;
          }
          if (this.sawDone) {
            const safe = parts === undefined ? data.subarray(emitFrom, next) : Buffer.concat([...parts, data.subarray(emitFrom, next)]);
            return { safe, failure: undefined };
          }
        }
        this.resetEvent();
        eventStart = next;
      } else {
        this.addLine(data, start, lineEnd);
      }
      start = next;
      if (last) break;
    }
    if (eventStart < data.length) this.partial = Buffer.from(data.subarray(eventStart));
    const tail = data.subarray(emitFrom, eventStart);
    return { safe: parts === undefined ? tail : Buffer.concat([...parts, tail]), failure: undefined };
  }

  private resetEvent(): void {
    this.dataFrom.length = 0;
    this.dataTo.length = 0;
    this.errorEvent = false;
  }

  private addLine(data: Buffer, start: number, end: number): void {
    if (startsWith(data, start, end, DATA)) {
      let from = start + DATA.length;
      if (data[from] === SPACE) from++;
      this.dataFrom.push(from);
      this.dataTo.push(end);
    } else if (startsWith(data, start, end, EVENT)) {
      let from = start + EVENT.length;
      while (from < end && data[from] === SPACE) from++;
      this.errorEvent = data.toString('latin1', from, end).trim() === 'error';
    }
  }

  /**
   * Decides one complete event: `original` (send its bytes), `none` (drop it), replacement bytes,
   * `fail` (malformed) or the backend's error.
   */
  private dispatch(data: Buffer, keys: KeyFinder): 'original' | 'none' | 'fail' | IopError | Buffer[] {
    if (this.dataFrom.length > 1) return this.reframe(data);
    let from = this.dataFrom[0]!;
    let to = this.dataTo[0]!;
    while (from < to && data[from] === SPACE) from++;
    while (to > from && data[to - 1] === SPACE) to--;
    if (from === to) return 'original';
    if (to - from === DONE.length && data.compare(DONE, 0, DONE.length, from, to) === 0) return this.done();
    if (data[from] !== OPEN || data[to - 1] !== CLOSE) return 'fail';
    const finish = keys.valueAfter(FINISH, from, to);
    if (finish !== -1 && data[finish] === QUOTE) this.sawFinish = true;
    const usage = keys.valueAfter(USAGE, from, to);
    const error = keys.valueAfter(ERROR, from, to);
    const needsRules = this.errorEvent || (usage !== -1 && data[usage] !== LOWER_N) || (error !== -1 && data[error] !== LOWER_N);
    if (!needsRules) return 'original';
    return this.applyRules(data.toString('utf8', from, to), false);
  }

  /** A multi-line data event: the lines joined with `\n` are the payload (SSE), re-sent on one line. */
  private reframe(data: Buffer): 'original' | 'none' | 'fail' | IopError | Buffer[] {
    let payload = '';
    for (let i = 0; i < this.dataFrom.length; i++) payload += (i === 0 ? '' : '\n') + data.toString('utf8', this.dataFrom[i], this.dataTo[i]);
    if (payload.trim() === '[DONE]') {
      this.done();
      return [DONE_EVENT];
    }
    return this.applyRules(payload, true);
  }

  private applyRules(payload: string, reframe: boolean): 'original' | 'none' | 'fail' | IopError | Buffer[] {
    let chunk: unknown;
    try {
      chunk = JSON.parse(payload);
    } catch {
      return 'fail';
    }
    const verdict = this.rules.apply(chunk, { errorEvent: this.errorEvent, reframe });
    if (verdict.kind === 'error') return verdict.error;
    if (verdict.finished) this.sawFinish = true;
    return verdict.bytes === 'original' || verdict.bytes === 'none' ? verdict.bytes : [verdict.bytes];
  }

  /** `[DONE]`: the held usage chunk goes right before it. */
  private done(): 'original' | Buffer[] {
    this.sawDone = true;
    const usage = this.rules.takeUsage();
    return usage === undefined ? 'original' : [usage, DONE_EVENT];
  }
}
