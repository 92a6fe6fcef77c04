/**
 * Collects a request's token usage, from the agent's USAGE frame (passthrough) or the decoder's
 * usage event (normalized path), and records it once at the end: Prometheus counters and the
 * request's completion log line.
 *
 * A stream that ends without the backend's usage (the client left, or it failed mid-way: the
 * backend's final usage chunk never came) is billed an estimate (`settle`): the prompt estimate
 * plus one output token per generated chunk (vLLM, SGLang and llama.cpp server stream one token
 * per chunk by default). Without it, a client could cancel every stream just before its end and
 * stay within any token limit or budget.
 */
import type { Usage as HubUsage } from '@iop/core';
import type { Usage as FrameUsage } from '@iop/proto';
import type { EdgeMetrics, ResponseLabels } from '../metrics.js';

export class UsageRecorder {
  private usage: HubUsage | undefined;
  /** The counters have the usage (`flush`): the ledger still reads it through `value`. */
  private flushed = false;
  /** Chunks of generated output seen (text, reasoning or tool-call deltas). */
  private generated = 0;
  /** The usage is the edge's estimate (`settle`), not the backend's. */
  estimated = false;

  constructor(private readonly metrics: EdgeMetrics) {}

  /** From a USAGE frame. */
  record(usage: FrameUsage | undefined): void {
    if (usage === undefined) return;
    this.flushed = false;
    this.usage = {
      inputTokens: usage.promptTokens,
      outputTokens: usage.completionTokens,
      cachedInputTokens: usage.cachedTokens,
      reasoningTokens: usage.reasoningTokens,
    };
  }

  /** From a normalized `usage` event. */
  recordHub(usage: HubUsage): void {
    this.flushed = false;
    this.usage = usage;
  }

  /** Counts `chunks` chunks of generated output (the estimate's output tokens, when no usage comes). */
  countGenerated(chunks = 1): void {
    this.generated += chunks;
  }

  /**
   * At the request's end: with no usage from the backend, bills an estimate when the backend did
   * work — it generated output, or (`started`) the request was stopped (client gone, deadline)
   * while a backend was working on it (the run accepted, not yet ended: its prompt's prefill).
   * `promptTokens` is called only then. Returns whether the usage is an estimate.
   */
  settle(started: boolean, promptTokens: () => number): boolean {
    if (this.usage !== undefined || (this.generated === 0 && !started)) return this.estimated;
    this.usage = { inputTokens: promptTokens(), outputTokens: this.generated };
    this.flushed = false;
    this.estimated = true;
    return true;
  }

  /** The last usage recorded, flushed or not (what the request is billed in the ledger and limits). */
  get value(): HubUsage | undefined {
    return this.usage;
  }

  /**
   * Adds the usage to the counters, labelled with how the answer was produced; `attempt` is
   * "answer" or "failed" (a retried attempt's tokens). Once per usage recorded: undefined when
   * there is none, or it was flushed already.
   */
  flush(model: string, response: ResponseLabels, attempt: 'answer' | 'failed' = 'answer'): HubUsage | undefined {
    const usage = this.usage;
    if (usage === undefined || this.flushed) return undefined;
    const add = (kind: string, value: number | undefined) => {
      if (value !== undefined && value > 0) this.metrics.tokens.inc({ model, kind, attempt, mode: response.mode, policy: response.policy }, value);
    };
    add('prompt', usage.inputTokens);
    add('completion', usage.outputTokens);
    add('cached', usage.cachedInputTokens);
    add('reasoning', usage.reasoningTokens);
    this.flushed = true;
    return usage;
  }
}
