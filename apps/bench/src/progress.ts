/**
 * The progress of `iop-bench` on stderr: done/total, requests/s, errors, p50 TTFT, elapsed and
 * the estimated time remaining. On a terminal one line redrawn every 250 ms; elsewhere (pipes,
 * CI logs) a plain line every 10 s, so a long run shows it is alive and when it will end.
 */
import type { RequestResult } from './request.js';
import { percentile } from './stats.js';

const REDRAW_MS = 250;
const LOG_MS = 10_000;

export class ProgressLine {
  private timer: NodeJS.Timeout | undefined;
  private done = 0;
  private errors = 0;
  private readonly ttfts: number[] = [];
  private readonly started = performance.now();

  constructor(
    private readonly total: number,
    private readonly stream: NodeJS.WriteStream = process.stderr,
  ) {
    const tty = stream.isTTY === true;
    this.timer = setInterval(
      () => (tty ? this.draw() : this.stream.write(`${this.line()}\n`)),
      tty ? REDRAW_MS : LOG_MS,
    );
    this.timer.unref();
    this.tty = tty;
  }

  private readonly tty: boolean;

  private line(): string {
    const seconds = (performance.now() - this.started) / 1000;
    const sorted = [...this.ttfts].sort((a, b) => a - b);
    const p50 = sorted.length === 0 ? '-' : `${percentile(sorted, 50).toFixed(1)} ms`;
    const total = Number.isFinite(this.total) ? `/${this.total}` : '';
    const remaining =
      Number.isFinite(this.total) && this.done > 0
        ? `, ~${Math.round((seconds * (this.total - this.done)) / this.done)} s left`
        : '';
    return `${this.done}${total} done  ${(this.done / Math.max(seconds, 0.001)).toFixed(1)} req/s  ${this.errors} errors  p50 TTFT ${p50}  ${Math.round(seconds)} s elapsed${remaining}`;
  }

  record(result: RequestResult): void {
    this.done++;
    if (!result.ok) this.errors++;
    else if (result.ttftMs !== undefined) this.ttfts.push(result.ttftMs);
  }

  stop(): void {
    if (this.timer === undefined) return;
    clearInterval(this.timer);
    this.timer = undefined;
    if (!this.tty) return;
    this.draw();
    this.stream.write('\n');
  }

  private draw(): void {
    this.stream.write(`\r\x1b[2K${this.line()}`);
  }
}
