/**
 * Collects a request's token usage per attempt — from the agent's USAGE frame (passthrough) or
 * the decoded `usage` event of each gate attempt (normalized path, recorded by the dispatcher) —
 * and what the request is billed at its end: the sum over its attempts (the ledger, the key's
 * limits and budget) and the answer's own usage (the Prometheus counters, once; a discarded gate
 * attempt's backend usage is counted there by gate/gate-sink.ts as `attempt="failed"`).
 *
 * An attempt that ends without the backend's usage (the client left, the gate discarded it, or it
 * failed mid-way: the backend's final usage chunk never came) is billed an estimate (`settle`):
 * the prompt estimate plus one output token per generated chunk (vLLM, SGLang and llama.cpp
 * server stream one token per chunk by default). Without it, a client could cancel every stream
 * just before its end, or have the gate retry, and stay within any token limit or budget.
 */
import type { Usage as HubUsage } from '@iop/core';
import type { Usage as FrameUsage } from '@iop/proto';
import type { EdgeMetrics, ResponseLabels } from '../metrics.js';

/** One attempt's usage: the backend's, once it came, and the chunks of output it generated. */
export interface AttemptUsage {
  usage: HubUsage | undefined;
  /** Chunks of generated output seen (text, reasoning or tool-call deltas). */
  generated: number;
}

const USAGE_FIELDS = [
  'inputTokens',
  'outputTokens',
  'cachedInputTokens',
  'cacheWriteTokens',
  'reasoningTokens',
] as const;

export class UsageRecorder {
  private readonly attempts: AttemptUsage[] = [];
  /** The answer's usage as the client got it (normalized path: the gate's released `usage` event). */
  private answer: HubUsage | undefined;
  /** The counters have the answer's usage (`flush`): the ledger still reads it through `value`. */
  private flushed = false;
  /** Some attempt's usage is the edge's estimate (`settle`), not the backend's. */
  estimated = false;

  constructor(private readonly metrics: EdgeMetrics) {}

  /**
   * A new attempt (the gate's dispatcher, per attempt); `record`, `recordHub` and `countGenerated` apply to the last
   * one.
   */
  beginAttempt(): AttemptUsage {
    const attempt: AttemptUsage = { usage: undefined, generated: 0 };
    this.attempts.push(attempt);
    return attempt;
  }

  private current(): AttemptUsage {
    return this.attempts.at(-1) ?? this.beginAttempt();
  }

  /** The backend's token counts from a USAGE frame; a count the frame does not have (not reported) stays absent. */
  record(usage: Omit<FrameUsage, '$typeName'> | undefined): void {
    if (usage === undefined) return;
    const hub: HubUsage = {};
    if (usage.promptTokens !== undefined) hub.inputTokens = usage.promptTokens;
    if (usage.completionTokens !== undefined) hub.outputTokens = usage.completionTokens;
    if (usage.cachedTokens !== undefined) hub.cachedInputTokens = usage.cachedTokens;
    if (usage.reasoningTokens !== undefined) hub.reasoningTokens = usage.reasoningTokens;
    this.recordHub(hub);
  }

  /** From a normalized `usage` event (or `record`). */
  recordHub(usage: HubUsage): void {
    this.flushed = false;
    this.current().usage = usage;
  }

  /**
   * The usage the answer carries to the client (the gate's `usage` event: its released attempts'); what the counters
   * get.
   */
  recordAnswer(usage: HubUsage): void {
    this.flushed = false;
    this.answer = usage;
  }

  /** Counts `chunks` chunks of generated output (the estimate's output tokens, when no usage comes). */
  countGenerated(chunks = 1): void {
    this.current().generated += chunks;
  }

  /**
   * At the request's end: each attempt with no usage from the backend is billed an estimate when
   * the backend did work on it — it generated output, or (`started`, the last attempt only) the
   * request was stopped (client gone, deadline) while a backend was working on it (the run
   * accepted, not yet ended: its prompt's prefill). `promptTokens` is called at most once.
   * Returns whether any usage is an estimate.
   */
  settle(started: boolean, promptTokens: () => number): boolean {
    let prompt: number | undefined;
    this.attempts.forEach((attempt, index) => {
      if (attempt.usage !== undefined) return;
      if (attempt.generated === 0 && !(started && index === this.attempts.length - 1)) return;
      prompt ??= promptTokens();
      attempt.usage = { inputTokens: prompt, outputTokens: attempt.generated };
      this.flushed = false;
      this.estimated = true;
    });
    if (started && this.attempts.length === 0) {
      this.beginAttempt().usage = { inputTokens: promptTokens(), outputTokens: 0 };
      this.estimated = true;
    }
    return this.estimated;
  }

  /** What the request is billed (the ledger and limits): every attempt's usage summed; undefined when none has any. */
  get value(): HubUsage | undefined {
    let total: HubUsage | undefined;
    for (const { usage } of this.attempts) {
      if (usage === undefined) continue;
      total ??= {};
      for (const key of USAGE_FIELDS) {
        const value = usage[key];
        if (value !== undefined) total[key] = (total[key] ?? 0) + value;
      }
    }
    return total;
  }

  /**
   * Adds the answer's usage (`recordAnswer`'s, else the last attempt's) to the counters, labelled with how the answer
   * was produced; `attempt` is "answer" or "failed" (a stream that ended in an error). Once per usage recorded. Returns
   * what the request is billed (`value`), or undefined when the counters had it already.
   */
  flush(model: string, response: ResponseLabels, attempt: 'answer' | 'failed' = 'answer'): HubUsage | undefined {
    const usage = this.answer ?? this.attempts.at(-1)?.usage;
    if (usage === undefined || this.flushed) return undefined;
    const add = (kind: string, value: number | undefined) => {
      if (value !== undefined && value > 0)
        this.metrics.tokens.inc({ model, kind, attempt, mode: response.mode, policy: response.policy }, value);
    };
    add('prompt', usage.inputTokens);
    add('completion', usage.outputTokens);
    add('cached', usage.cachedInputTokens);
    add('reasoning', usage.reasoningTokens);
    this.flushed = true;
    return this.value;
  }
}
