import type { AttemptReport } from '@iop/stream-gate';
import { GateMetrics, createGateSink } from '../../../src/gate/gate-sink.js';
import { createLogger } from '../../../src/logger.js';
import { EdgeMetrics } from '../../../src/metrics.js';

function report(extra: Partial<AttemptReport>): AttemptReport {
  return {
    requestId: 'req_1',
    model: 'm',
    attempt: 1,
    idempotencyKey: 'req_1:1',
    provider: 'agent-a',
    outcome: 'answered',
    durationMs: 12,
    committed: true,
    usage: undefined,
    wasted: false,
    peakHeldBytes: 0,
    ...extra,
  };
}

describe('gate sink metrics', () => {
  it('observes each attempt’s peak held bytes in iop_gate_held_bytes by model, and counts outcomes', async () => {
    const metrics = new EdgeMetrics();
    const sink = createGateSink(
      new GateMetrics(metrics),
      metrics,
      createLogger('silent'),
      (model) => (model === 'm' ? 'm' : 'unknown'),
      () => 'buffered+strict',
    );
    sink.attempt(
      report({
        outcome: 'retried',
        committed: false,
        wasted: true,
        peakHeldBytes: 300,
        usage: { inputTokens: 10, outputTokens: 4 },
      }),
    );
    sink.attempt(report({ attempt: 2, peakHeldBytes: 5000 }));
    sink.attempt(report({ model: 'other', peakHeldBytes: 100 }));
    const text = await metrics.registry.metrics();
    expect(text).toContain('iop_gate_held_bytes_sum{model="m"} 5300');
    expect(text).toContain('iop_gate_held_bytes_count{model="m"} 2');
    expect(text).toContain('iop_gate_held_bytes_bucket{le="256",model="m"} 0');
    expect(text).toContain('iop_gate_held_bytes_bucket{le="1024",model="m"} 1');
    expect(text).toContain('iop_gate_held_bytes_bucket{le="16384",model="m"} 2');
    expect(text).toContain('iop_gate_held_bytes_sum{model="unknown"} 100');
    expect(text).toContain('iop_gate_attempts_total{model="m",outcome="retried"} 1');
    expect(text).toContain('iop_gate_attempts_total{model="m",outcome="answered"} 1');
    expect(text).toContain(
      'iop_tokens_total{model="m",kind="completion",attempt="failed",mode="normalized",policy="buffered+strict"} 4',
    );
  });
});
