/**
 * How the sim puts SSE text on the wire, to exercise a client's SSE reader the way real servers
 * and networks do:
 * - `lf`: `\n` line ends, each batch in one write (vLLM).
 * - `crlf`: `\r\n` line ends (some proxies and servers; valid per the WHATWG event stream format).
 * - `split`: every SSE event is cut in two, and the pieces are written 2 ms apart so they arrive in
 *   separate TCP reads.
 * - `crlf-split`: both.
 * - `multiline`: each JSON payload spread over several `data:` lines (`multiline-data.ts`).
 * JSON payloads never hold a raw newline, so rewriting line ends cannot touch data.
 */
import type { ServerResponse } from 'node:http';
import { multilineData } from './multiline-data.js';

export const FRAMINGS = ['lf', 'crlf', 'split', 'crlf-split', 'multiline'] as const;
export type Framing = (typeof FRAMINGS)[number];

const SPLIT_GAP_MS = 2;

export class FramedOutput {
  private readonly crlf: boolean;
  private readonly split: boolean;
  private readonly multiline: boolean;
  private queue: Promise<void> = Promise.resolve();

  constructor(
    private readonly res: ServerResponse,
    framing: Framing,
  ) {
    this.crlf = framing === 'crlf' || framing === 'crlf-split';
    this.split = framing === 'split' || framing === 'crlf-split';
    this.multiline = framing === 'multiline';
  }

  private frame(text: string): string {
    if (this.multiline) return multilineData(text);
    return this.crlf ? text.replace(/\n/g, '\r\n') : text;
  }

  /** Like `res.write`; in split mode always returns true (test outputs are small). */
  write(text: string, callback?: () => void): boolean {
    if (!this.split) return this.res.write(this.frame(text), callback);
    this.enqueue(this.pieces(this.frame(text)), callback);
    return true;
  }

  end(text: string): void {
    if (!this.split) {
      this.res.end(this.frame(text));
      return;
    }
    this.enqueue(this.pieces(this.frame(text)), () => this.res.end());
  }

  private pieces(text: string): string[] {
    const separator = this.crlf ? '\r\n\r\n' : '\n\n';
    const out: string[] = [];
    for (const event of text.split(separator)) {
      if (event.length === 0) continue;
      const whole = event + separator;
      const cut = Math.max(1, Math.floor(whole.length / 2));
      out.push(whole.slice(0, cut), whole.slice(cut));
    }
    return out;
  }

  private enqueue(pieces: string[], done?: () => void): void {
    this.queue = this.queue.then(async () => {
      for (const piece of pieces) {
        if (this.res.destroyed) return;
        this.res.write(piece);
        await new Promise((resolve) => setTimeout(resolve, SPLIT_GAP_MS));
      }
      done?.();
    });
  }
}
