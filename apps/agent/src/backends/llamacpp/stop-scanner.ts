/**
 * Finds the first `stop` sequence in generated text as it streams (OpenAI API reference
 * "Completions › stop": the returned text does not contain the stop sequence, but everything
 * before it). Text that could be the start of a stop sequence is held back until the next chunk
 * tells; the rest is released at once. Whatever the chunking of the text, the released text and
 * the stop found are the same (a property test checks it).
 *
 * node-llama-cpp's own `customStopTriggers` match whole tokens: a stop sequence that starts
 * inside a token drops that token's text before it, and a stop with a leading space may not
 * match at all, so the embedded backend matches stops on the text here.
 */
export class StopScanner {
  private pending = '';
  /** The stop sequence found; nothing more is released after it. */
  stopped: string | undefined;

  constructor(private readonly stops: readonly string[]) {}

  /** Takes the next chunk of text; returns what may be released now. */
  push(chunk: string): string {
    if (this.stopped !== undefined) return '';
    this.pending += chunk;
    let at = -1;
    for (const stop of this.stops) {
      const index = stop === '' ? -1 : this.pending.indexOf(stop);
      if (index !== -1 && (at === -1 || index < at)) {
        at = index;
        this.stopped = stop;
      }
    }
    if (at !== -1) {
      const out = this.pending.slice(0, at);
      this.pending = '';
      return out;
    }
    const held = this.heldLength();
    const out = this.pending.slice(0, this.pending.length - held);
    this.pending = this.pending.slice(this.pending.length - held);
    return out;
  }

  /** The end of the text: what was held back, when no stop came. */
  end(): string {
    const out = this.stopped === undefined ? this.pending : '';
    this.pending = '';
    return out;
  }

  /** The longest end of `pending` that begins some stop sequence. */
  private heldLength(): number {
    let longest = 0;
    for (const stop of this.stops) {
      for (let length = Math.min(stop.length - 1, this.pending.length); length > longest; length--) {
        if (this.pending.endsWith(stop.slice(0, length))) {
          longest = length;
          break;
        }
      }
    }
    return longest;
  }
}
