/**
 * UsageRecorder: the counters get a request's usage once (a failed stream's tokens as
 * `attempt="failed"`), and the ledger still reads it after that flush; a stream without the
 * backend's usage is billed an estimate.
 */
import { create } from '@bufbuild/protobuf';
import { UsageSchema } from '@iop/proto';
import { EdgeMetrics } from '../../../src/metrics';
import { UsageRecorder } from '../../../src/attempt/usage-recorder';

const labels = { mode: 'passthrough' as const, policy: 'none' };

it('counts a failed stream once and keeps its usage for the ledger', async () => {
  const metrics = new EdgeMetrics();
  const usage = new UsageRecorder(metrics);
  usage.record(create(UsageSchema, { promptTokens: 12, completionTokens: 5 }));
  // Cached and reasoning tokens were not reported: they stay unknown, not 0.
  expect(usage.flush('m', labels, 'failed')).toEqual({ inputTokens: 12, outputTokens: 5 });
  expect(usage.flush('m', labels)).toBeUndefined(); // not counted twice
  expect(usage.value).toEqual({ inputTokens: 12, outputTokens: 5 });
  const text = await metrics.registry.metrics();
  expect(text).toContain(
    'iop_tokens_total{model="m",kind="completion",attempt="failed",mode="passthrough",policy="none"} 5',
  );
  expect(text).not.toContain('attempt="answer"');
});

it('keeps a count the backend reported as 0 apart from one it did not report', () => {
  const usage = new UsageRecorder(new EdgeMetrics());
  usage.record(create(UsageSchema, { promptTokens: 9, completionTokens: 0, cachedTokens: 0 }));
  expect(usage.value).toEqual({ inputTokens: 9, outputTokens: 0, cachedInputTokens: 0 });
  expect(usage.value?.reasoningTokens).toBeUndefined();
});

describe('settle: the estimate of a stream that ended without usage', () => {
  it('bills the prompt estimate plus one token per generated chunk, once, and counts it', async () => {
    const metrics = new EdgeMetrics();
    const usage = new UsageRecorder(metrics);
    usage.countGenerated(7);
    usage.countGenerated();
    const prompt = jest.fn(() => 30);
    expect(usage.settle(false, prompt)).toBe(true);
    expect(usage.settle(false, prompt)).toBe(true);
    expect(prompt).toHaveBeenCalledTimes(1);
    expect(usage.value).toEqual({ inputTokens: 30, outputTokens: 8 });
    expect(usage.estimated).toBe(true);
    expect(usage.flush('m', labels)).toEqual({ inputTokens: 30, outputTokens: 8 });
    expect(await metrics.registry.metrics()).toContain(
      'iop_tokens_total{model="m",kind="prompt",attempt="answer",mode="passthrough",policy="none"} 30',
    );
  });

  it("keeps the backend's usage when there is some", () => {
    const usage = new UsageRecorder(new EdgeMetrics());
    usage.countGenerated(3);
    usage.record(create(UsageSchema, { promptTokens: 12, completionTokens: 5 }));
    expect(usage.settle(true, () => 99)).toBe(false);
    expect(usage.value).toMatchObject({ inputTokens: 12, outputTokens: 5 });
  });

  it('bills the prompt of a run the client left before its first token (prefill), and nothing when no run started', () => {
    const started = new UsageRecorder(new EdgeMetrics());
    expect(started.settle(true, () => 40)).toBe(true);
    expect(started.value).toEqual({ inputTokens: 40, outputTokens: 0 });
    const never = new UsageRecorder(new EdgeMetrics());
    expect(never.settle(false, () => 40)).toBe(false);
    expect(never.value).toBeUndefined();
  });
});

it('sums every attempt for the ledger (a discarded one at its estimate) and counts only the answer in the metrics', async () => {
  const metrics = new EdgeMetrics();
  const usage = new UsageRecorder(metrics);
  const discarded = usage.beginAttempt();
  discarded.generated = 20;
  const answered = usage.beginAttempt();
  answered.usage = { inputTokens: 12, outputTokens: 30, cachedInputTokens: 4 };
  usage.recordAnswer({ inputTokens: 12, outputTokens: 30, cachedInputTokens: 4 });
  expect(usage.settle(false, () => 15)).toBe(true);
  expect(usage.value).toEqual({ inputTokens: 27, outputTokens: 50, cachedInputTokens: 4 });
  expect(usage.flush('m', labels)).toEqual({ inputTokens: 27, outputTokens: 50, cachedInputTokens: 4 });
  expect(await metrics.registry.metrics()).toContain(
    'iop_tokens_total{model="m",kind="completion",attempt="answer",mode="passthrough",policy="none"} 30',
  );
});
