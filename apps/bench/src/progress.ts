/**
 * The live progress line of `iop-bench` on stderr: done/total, requests/s, errors, p50 TTFT.
 * Redrawn at most every 250 ms, and only when stderr is a terminal (never in pipes or CI logs).
 */
import type { RequestResult } from './request.js';
import { percentile } from './stats.js';

const REDRAW_MS = 250;

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
    if (stream.isTTY === true) {
      this.timer = setInterval(() => this.draw(), REDRAW_MS);
      this.timer.unref();
    }
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
    this.draw();
    this.stream.write('\n');
  }

  private draw(): void {
    const seconds = (performance.now() - this.started) / 1000;
    const sorted = [...this.ttfts].sort((a, b) => a - b);
    const p50 = sorted.length === 0 ? '-' : `${percentile(sorted, 50).toFixed(1)} ms`;
    const total = Number.isFinite(this.total) ? `/${this.total}` : '';
    this.stream.write(`\r\x1b[2K${this.done}${total} done  ${(this.done / Math.max(seconds, 0.001)).toFixed(1)} req/s  ${this.errors} errors  p50 TTFT ${p50}`);
  }
}
