/**
 * Collects a request's token usage, from the agent's USAGE frame (passthrough) or the decoder's
 * usage event (normalized path), and records it once at the end: Prometheus counters and the
 * request's completion log line.
 */
import type { Usage as HubUsage } from '@iop/core';
import type { Usage as FrameUsage } from '@iop/proto';
import type { EdgeMetrics, ResponseLabels } from '../metrics.js';

export class UsageRecorder {
  private usage: HubUsage | undefined;

  constructor(private readonly metrics: EdgeMetrics) {}

  /** From a USAGE frame. */
  record(usage: FrameUsage | undefined): void {
    if (usage === undefined) return;
    this.usage = {
      inputTokens: usage.promptTokens,
      outputTokens: usage.completionTokens,
      cachedInputTokens: usage.cachedTokens,
      reasoningTokens: usage.reasoningTokens,
    };
  }

  /** From a normalized `usage` event. */
  recordHub(usage: HubUsage): void {
    this.usage = usage;
  }

  get value(): HubUsage | undefined {
    return this.usage;
  }

  /**
   * Adds the usage to the counters, labelled with how the answer was produced; `attempt` is
   * "answer" or "failed" (a retried attempt's tokens).
   */
  flush(model: string, response: ResponseLabels, attempt: 'answer' | 'failed' = 'answer'): HubUsage | undefined {
    const usage = this.usage;
    if (usage === undefined) return undefined;
    const add = (kind: string, value: number | undefined) => {
      if (value !== undefined && value > 0) this.metrics.tokens.inc({ model, kind, attempt, mode: response.mode, policy: response.policy }, value);
    };
    add('prompt', usage.inputTokens);
    add('completion', usage.outputTokens);
    add('cached', usage.cachedInputTokens);
    add('reasoning', usage.reasoningTokens);
    this.usage = undefined;
    return usage;
  }
}
