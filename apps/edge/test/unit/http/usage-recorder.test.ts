/**
 * UsageRecorder: the counters get a request's usage once (a failed stream's tokens as
 * `attempt="failed"`), and the ledger still reads it after that flush.
 */
import { create } from '@bufbuild/protobuf';
import { UsageSchema } from '@iop/proto';
import { EdgeMetrics } from '../../../src/metrics';
import { UsageRecorder } from '../../../src/http/usage-recorder';

const labels = { mode: 'passthrough' as const, policy: 'none' };

it('counts a failed stream once and keeps its usage for the ledger', async () => {
  const metrics = new EdgeMetrics();
  const usage = new UsageRecorder(metrics);
  usage.record(create(UsageSchema, { promptTokens: 12, completionTokens: 5 }));
  expect(usage.flush('m', labels, 'failed')).toEqual({ inputTokens: 12, outputTokens: 5, cachedInputTokens: 0, reasoningTokens: 0 });
  expect(usage.flush('m', labels)).toBeUndefined(); // not counted twice
  expect(usage.value).toEqual({ inputTokens: 12, outputTokens: 5, cachedInputTokens: 0, reasoningTokens: 0 });
  const text = await metrics.registry.metrics();
  expect(text).toContain('iop_tokens_total{model="m",kind="completion",attempt="failed",mode="passthrough",policy="none"} 5');
  expect(text).not.toContain('attempt="answer"');
});
