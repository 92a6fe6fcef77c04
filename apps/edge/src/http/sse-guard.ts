/**
 * A cheap structural check of a relayed SSE stream (passthrough path), so a malformed chunk is
 * never handed to the client as if it were part of a good answer: every `data:` line must carry
 * `[DONE]` or a JSON object (first byte `{`, last byte `}`) — a truncated chunk fails it. Nothing
 * is parsed; bytes are scanned once for line ends.
 *
 * Only complete lines are passed on; a frame that ends mid-line leaves that partial line held
 * until the next frame (frames from backends nearly always end on an event boundary).
 */
const NEWLINE = 0x0a;
const CR = 0x0d;
const SPACE = 0x20;
const OPEN = 0x7b;
const CLOSE = 0x7d;
const DATA = Buffer.from('data:');
const DONE = Buffer.from('[DONE]');

export interface GuardResult {
  /** Bytes to send now: complete lines, up to (not including) a malformed one. */
  safe: Buffer;
  /** A malformed `data:` line was found: send `safe`, then end the stream with an error. */
  malformed: boolean;
}

export class SseGuard {
  private partial: Buffer | undefined;
  /** Whether the `data: [DONE]` terminator has passed (a stream without it was cut). */
  sawDone = false;

  push(chunk: Uint8Array): GuardResult {
    const data = this.partial === undefined ? Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength) : Buffer.concat([this.partial, chunk]);
    this.partial = undefined;
    let start = 0;
    for (let end = data.indexOf(NEWLINE); end !== -1; end = data.indexOf(NEWLINE, start)) {
      const line = classifyLine(data, start, end);
      if (line === 'malformed') return { safe: data.subarray(0, start), malformed: true };
      if (line === 'done') this.sawDone = true;
      start = end + 1;
    }
    if (start < data.length) this.partial = Buffer.from(data.subarray(start));
    return { safe: data.subarray(0, start), malformed: false };
  }

  /** The held partial line at the end of the stream (an SSE stream must end with a newline; this is what was cut). */
  end(): Buffer | undefined {
    const rest = this.partial;
    this.partial = undefined;
    if (rest !== undefined && classifyLine(rest, 0, rest.length) === 'done') this.sawDone = true;
    return rest;
  }
}

/** Classifies `data[start..end)` (one line, `\n` excluded): a `data:` line must carry `[DONE]` or a `{…}` object. */
function classifyLine(data: Buffer, start: number, end: number): 'other' | 'done' | 'malformed' {
  if (end - start < DATA.length || data.compare(DATA, 0, DATA.length, start, start + DATA.length) !== 0) return 'other';
  let from = start + DATA.length;
  let to = end;
  while (from < to && data[from] === SPACE) from++;
  while (to > from && (data[to - 1] === CR || data[to - 1] === SPACE)) to--;
  if (from === to) return 'other';
  if (data[from] === OPEN) return data[to - 1] === CLOSE ? 'other' : 'malformed';
  return to - from === DONE.length && data.compare(DONE, 0, DONE.length, from, to) === 0 ? 'done' : 'malformed';
}
