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
    return this.scan(false);
  }

  /** The end of the text: what was held back, when no stop came. */
  end(): string {
    if (this.stopped !== undefined) return '';
    return this.scan(true);
  }

  /**
   * Walks `pending` from its start: at the first position where a stop sequence is complete, the
   * text stops there (of stops starting at the same position, the shortest, which a stream completes
   * first); at the first position where a stop sequence could still complete with more text (unless
   * `final`), the rest is held back. Deciding by start position, never by which stop completed in the
   * latest chunk, is what keeps the result independent of the chunking.
   */
  private scan(final: boolean): string {
    const pending = this.pending;
    for (let at = 0; at < pending.length; at++) {
      let found: string | undefined;
      let open = false;
      for (const stop of this.stops) {
        if (stop === '') continue;
        if (pending.startsWith(stop, at)) {
          if (found === undefined || stop.length < found.length) found = stop;
        } else if (!final && stop.startsWith(pending.slice(at))) open = true;
      }
      if (found !== undefined) {
        this.stopped = found;
        this.pending = '';
        return pending.slice(0, at);
      }
      if (open) {
        this.pending = pending.slice(at);
        return pending.slice(0, at);
      }
    }
    this.pending = '';
    return pending;
  }
}
