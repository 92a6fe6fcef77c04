/**
 * Writes one planned chat completion as an SSE stream with simulated timing: the role chunk and
 * the first token after TTFT, then one token every ITL, then the finish chunk, the usage chunk
 * (when asked) and `[DONE]` (docs/protocols.md "Chat stream").
 *
 * Token i is due at `start + ttftMs + i * itlMs`; every token already due is written in one batch,
 * so ITL 0 streams a whole answer in a single write. Under a GPU profile the scheduler gives the
 * TTFT when it admits the request (`begin`), and `itl()` is re-read after every token, so the gap
 * follows the running batch. Backpressure: when `write` returns false the
 * stream waits for `drain`. A mid-stream fault fires once `faultAfter` tokens are out.
 */
import type { ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { DONE_FRAME, errorFrame, type ChunkFramer } from './chunk-framer.js';
import { FramedOutput, type Framing } from './framed-output.js';
import type { OutputPlan } from './output-plan.js';
import type { SimStats } from './request-log.js';

/** Faults that happen after the response has started. */
export type MidStreamFault = 'stall' | 'cut' | 'malformed' | 'no-done' | 'error-chunk' | 'finish-no-done';

export const MID_STREAM_FAULTS: readonly string[] = [
  'stall',
  'cut',
  'malformed',
  'no-done',
  'error-chunk',
  'finish-no-done',
] satisfies MidStreamFault[];

export interface ChatStreamOptions {
  ttftMs: number;
  itlMs: number;
  fault: MidStreamFault | undefined;
  /** Tokens written before the fault (clamped to the planned count). */
  faultAfter: number;
  /** Send the trailing `choices:[]` usage chunk. */
  usageChunk: boolean;
  /** How SSE text is put on the wire (see framed-output.ts). */
  framing: Framing;
  /** Called before the sim itself destroys the socket (fault=cut), so it is not taken for a client abort. */
  onServerClose: () => void;
  /** Counters of stream writes: bytes and writes that hit backpressure. */
  stats?: Pick<SimStats, 'streamBytes' | 'pausedWrites'>;
  /** The current ITL in ms, read after each token; overrides `itlMs` (GPU profile). */
  itl?: () => number;
  /** Advanced to the number of tokens written (the scheduler's KV accounting). */
  progress?: { generatedTokens: number };
}

/** The framer and options of one streamed answer, before its writer is made. */
export interface StreamSetup {
  framer: ChunkFramer;
  options: ChatStreamOptions;
}

/** Largest batch (UTF-16 units) written at once when many tokens are due. */
const MAX_BATCH_CHARS = 64 * 1024;

export class ChatStream {
  private next = 0;
  private roleSent = false;
  private faultPending: boolean;
  private readonly faultAt: number;
  private nextDueAt = 0;
  private timer: NodeJS.Timeout | undefined;
  private immediate: NodeJS.Immediate | undefined;
  private stopped = false;
  private readonly out: FramedOutput;

  constructor(
    private readonly res: ServerResponse,
    private readonly plan: OutputPlan,
    private readonly framer: ChunkFramer,
    private readonly options: ChatStreamOptions,
  ) {
    this.out = new FramedOutput(res, options.framing);
    // `finish-no-done` acts at the end of the stream, not at `faultAt`.
    this.faultPending = options.fault !== undefined && options.fault !== 'finish-no-done';
    this.faultAt = Math.min(options.faultAfter, plan.pieces.length);
  }

  /** Sends the headers now (as vLLM does) and schedules the first token at TTFT. */
  start(): void {
    this.open();
    this.begin(this.options.ttftMs);
  }

  /** Sends the headers (a queued request gets them at once, as vLLM does). */
  open(): void {
    this.res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
  }

  /** Schedules the role chunk and the first token `ttftMs` from now. */
  begin(ttftMs: number): void {
    if (this.stopped) return;
    this.nextDueAt = performance.now() + ttftMs;
    if (ttftMs > 0) {
      this.res.flushHeaders();
      this.timer = setTimeout(this.tick, ttftMs);
    } else {
      this.tick();
    }
  }

  /** Stops generating (client gone, or server closing). Idempotent. */
  stop(): void {
    this.stopped = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    if (this.immediate !== undefined) clearImmediate(this.immediate);
    this.timer = undefined;
    this.immediate = undefined;
  }

  private readonly tick = (): void => {
    this.timer = undefined;
    this.immediate = undefined;
    if (this.stopped) return;
    const { pieces } = this.plan;
    const now = performance.now();
    let batch = '';
    if (!this.roleSent) {
      this.roleSent = true;
      batch = this.framer.role();
    }
    let written = 0;
    for (;;) {
      if (this.faultPending && this.next === this.faultAt) {
        this.faultPending = false;
        if (this.options.fault === 'malformed') {
          batch += this.framer.malformed();
          continue;
        }
        this.fail(batch);
        return;
      }
      if (this.next === pieces.length) {
        this.finish(batch);
        return;
      }
      if ((written > 0 && this.nextDueAt > now) || batch.length >= MAX_BATCH_CHARS) break;
      batch += this.framer.piece(pieces[this.next]!, ++this.next);
      this.nextDueAt += this.options.itl === undefined ? this.options.itlMs : this.options.itl();
      written++;
      if (this.options.progress !== undefined) this.options.progress.generatedTokens = this.next;
    }
    const stats = this.options.stats;
    if (stats !== undefined) stats.streamBytes += Buffer.byteLength(batch);
    if (this.out.write(batch)) this.schedule();
    else {
      if (stats !== undefined) stats.pausedWrites++;
      this.res.once('drain', () => this.schedule());
    }
  };

  private schedule(): void {
    if (this.stopped) return;
    const delay = this.nextDueAt - performance.now();
    if (delay > 0) this.timer = setTimeout(this.tick, delay);
    else this.immediate = setImmediate(this.tick);
  }

  private finish(batch: string): void {
    const { plan, framer } = this;
    const completionTokens = plan.pieces.length;
    let tail = batch + framer.finish(plan.finishReason, plan.stopReason, completionTokens);
    if (this.options.usageChunk) tail += framer.usage(completionTokens);
    this.stopped = true;
    // `finish-no-done`: the whole answer (finish reason, usage) but the stream ends without `[DONE]`.
    this.out.end(this.options.fault === 'finish-no-done' ? tail : tail + DONE_FRAME);
  }

  private fail(batch: string): void {
    this.stopped = true;
    switch (this.options.fault) {
      case 'stall':
        if (batch.length > 0) this.out.write(batch); // and never another byte: the socket stays open
        return;
      case 'cut':
        this.options.onServerClose();
        if (batch.length === 0) this.res.socket?.destroy();
        else this.out.write(batch, () => this.res.socket?.destroy());
        return;
      case 'no-done':
        this.out.end(batch);
        return;
      case 'error-chunk':
        this.out.end(batch + errorFrame('simulated fault: error in the middle of the stream') + DONE_FRAME);
        return;
      default:
        return;
    }
  }
}
