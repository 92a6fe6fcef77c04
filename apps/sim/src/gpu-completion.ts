/**
 * A chat completion served by the GPU model (a sim started with a profile): the request joins the
 * scheduler's queue, gets its TTFT when admitted (queue + prefill), decodes at the ITL of the
 * running batch, and frees its slot when it ends or its client goes away.
 * - Stream: the headers go out at once (vLLM answers a queued stream with 200 and no chunk yet).
 * - Non-stream: nothing is sent until the last token, then the whole body (as vLLM does).
 */
import { performance } from 'node:perf_hooks';
import { ChatStream, type StreamSetup } from './chat-stream.js';
import type { Exchange } from './exchange.js';
import { Sequence, type FinishedReason, type GpuScheduler } from './gpu-scheduler.js';
import type { OutputPlan } from './output-plan.js';
import { blockHashes } from './kv-cache.js';
import { promptTokenIds } from './tokenizer.js';

/**
 * Longest real wait between progress updates of a non-stream generation (ms), so KV usage and batch changes are
 * followed.
 */
const SILENT_TICK_MS = 100;

function newSequence(
  scheduler: GpuScheduler,
  messages: readonly unknown[],
  promptTokens: number,
  onAdmit: (delayMs: number) => void,
): Sequence {
  const tokenIds = promptTokenIds(messages);
  return new Sequence(promptTokens, blockHashes(tokenIds, scheduler.profile.blockSize), tokenIds, onAdmit);
}

function endReason(exchange: Exchange, plan: OutputPlan): FinishedReason {
  if (!exchange.res.writableFinished || exchange.closedByServer) return 'abort';
  return plan.finishReason === 'length' ? 'length' : 'stop';
}

/** Streams `plan` paced by the scheduler. */
export function streamOnGpu(
  scheduler: GpuScheduler,
  exchange: Exchange,
  messages: readonly unknown[],
  plan: OutputPlan,
  setup: StreamSetup,
): void {
  const extraTtftMs = setup.options.ttftMs;
  // onAdmit runs from `submit` below, once the writer exists.
  const sequence = newSequence(scheduler, messages, exchange.record.output?.promptTokens ?? 0, (delayMs) =>
    writer.begin(Math.max(delayMs, extraTtftMs)),
  );
  const writer = new ChatStream(exchange.res, plan, setup.framer, {
    ...setup.options,
    itl: () => scheduler.itlMs(),
    progress: sequence,
  });
  exchange.record.status = 200;
  writer.open();
  exchange.onClose = () => {
    writer.stop();
    scheduler.release(sequence, endReason(exchange, plan));
  };
  scheduler.submit(sequence);
}

/**
 * Generates `plan` without sending anything, paced by the scheduler, then calls `respond` (the
 * whole body, or the fault in its place). `stall` never answers but holds its slot until the
 * client leaves.
 */
export function respondOnGpu(
  scheduler: GpuScheduler,
  exchange: Exchange,
  messages: readonly unknown[],
  plan: OutputPlan,
  extraTtftMs: number,
  respond: () => void,
  stall: boolean,
): void {
  const total = plan.pieces.length;
  let timer: NodeJS.Timeout | undefined;
  let nextDueAt = 0;
  const sequence = newSequence(scheduler, messages, exchange.record.output?.promptTokens ?? 0, (delayMs) => {
    nextDueAt = performance.now() + Math.max(delayMs, extraTtftMs);
    timer = setTimeout(tick, Math.max(0, nextDueAt - performance.now()));
  });
  const tick = (): void => {
    const now = performance.now();
    while (sequence.generatedTokens < total && nextDueAt <= now) {
      sequence.generatedTokens++;
      nextDueAt += scheduler.itlMs();
    }
    if (sequence.generatedTokens >= total) {
      timer = undefined;
      if (!stall) respond();
      return;
    }
    const remainingMs = nextDueAt - now + (total - sequence.generatedTokens - 1) * scheduler.itlMs();
    timer = setTimeout(tick, Math.min(SILENT_TICK_MS, Math.max(1, remainingMs)));
  };
  exchange.onClose = () => {
    if (timer !== undefined) clearTimeout(timer);
    scheduler.release(sequence, endReason(exchange, plan));
  };
  scheduler.submit(sequence);
}
