/**
 * The fields of one SSE event of the backend's stream, read as bytes (the event-stream format of the WHATWG HTML
 * standard, §9.2.6): its `data:` lines as [from, to) ranges of the buffer being read (one leading space dropped) and
 * whether its `event:` type is `error`. The caller splits lines (LF or CRLF) and ends the event at a blank line; the
 * passthrough guard reads events this way to relay the backend's own bytes uncopied.
 */

const SPACE = 0x20;
const DATA = Buffer.from('data:');
const EVENT = Buffer.from('event:');

/** Whether `data[start..end)` begins with `prefix` (a byte loop: cheaper than a native compare for a few bytes). */
function startsWith(data: Buffer, start: number, end: number, prefix: Buffer): boolean {
  if (end - start < prefix.length) return false;
  for (let i = 0; i < prefix.length; i++) if (data[start + i] !== prefix[i]) return false;
  return true;
}

export class SseEventFields {
  /** `data:` lines seen. */
  dataLines = 0;
  /** The first data line's value: nearly every event has one (the others are kept in `moreData`). */
  firstFrom = 0;
  firstTo = 0;
  private moreData: number[] | undefined;
  /** The event's type is `error`. */
  errorEvent = false;

  /** Starts a new event. */
  reset(): void {
    this.dataLines = 0;
    this.moreData = undefined;
    this.errorEvent = false;
  }

  /** One line of the event, `data[start..end)` without its line end; fields but `data` and `event` are ignored. */
  addLine(data: Buffer, start: number, end: number): void {
    if (startsWith(data, start, end, DATA)) {
      let from = start + DATA.length;
      if (from < end && data[from] === SPACE) from++;
      if (this.dataLines === 0) {
        this.firstFrom = from;
        this.firstTo = end;
      } else {
        (this.moreData ??= []).push(from, end);
      }
      this.dataLines++;
    } else if (startsWith(data, start, end, EVENT)) {
      let from = start + EVENT.length;
      while (from < end && data[from] === SPACE) from++;
      this.errorEvent = data.toString('latin1', from, end).trim() === 'error';
    }
  }

  /** The event's data: its data lines joined with `\n` (UTF-8). */
  payload(data: Buffer): string {
    let payload = data.toString('utf8', this.firstFrom, this.firstTo);
    const more = this.moreData ?? [];
    for (let i = 0; i < more.length; i += 2) payload += `\n${data.toString('utf8', more[i], more[i + 1])}`;
    return payload;
  }
}
