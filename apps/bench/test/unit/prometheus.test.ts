import { bucketPercentile, histogramDelta, parseMetrics, sumOf } from '../../src/prometheus.js';

const scrape = (count: [number, number, number], sum: number, retried: number) =>
  parseMetrics(`# HELP iop_gate_held_bytes Bytes held.
# TYPE iop_gate_held_bytes histogram
iop_gate_held_bytes_bucket{le="256",model="a"} ${count[0]}
iop_gate_held_bytes_bucket{le="1024",model="a"} ${count[1]}
iop_gate_held_bytes_bucket{le="+Inf",model="a"} ${count[2]}
iop_gate_held_bytes_sum{model="a"} ${sum}
iop_gate_held_bytes_count{model="a"} ${count[2]}
iop_gate_held_bytes_bucket{le="256",model="b \\"x\\""} 1
iop_gate_held_bytes_bucket{le="1024",model="b \\"x\\""} 1
iop_gate_held_bytes_bucket{le="+Inf",model="b \\"x\\""} 1
iop_gate_held_bytes_sum{model="b \\"x\\""} 100
iop_gate_held_bytes_count{model="b \\"x\\""} 1
iop_gate_attempts_total{model="a",outcome="retried"} ${retried}
iop_gate_attempts_total{model="a",outcome="answered"} 7
process_start_time_seconds 1700000000
`);

describe('Prometheus text parsing', () => {
  it('reads names, labels (quotes unescaped) and values', () => {
    const samples = scrape([0, 0, 0], 0, 2);
    expect(
      samples.find((sample) => sample.labels.model === 'b "x"' && sample.name === 'iop_gate_held_bytes_sum')?.value,
    ).toBe(100);
    expect(sumOf(samples, 'iop_gate_attempts_total', { outcome: 'retried' })).toBe(2);
    expect(sumOf(samples, 'iop_gate_attempts_total')).toBe(9);
    expect(sumOf(samples, 'process_start_time_seconds')).toBe(1_700_000_000);
  });

  it('a histogram delta sums label sets and subtracts the earlier scrape; percentiles are bucket bounds', () => {
    const delta = histogramDelta(scrape([1, 2, 2], 600, 0), scrape([3, 9, 10], 9000, 0), 'iop_gate_held_bytes');
    expect(delta).toEqual({
      count: 8,
      sum: 8400,
      buckets: [
        { le: 256, count: 2 },
        { le: 1024, count: 7 },
        { le: Number.POSITIVE_INFINITY, count: 8 },
      ],
    });
    expect(bucketPercentile(delta, 25)).toBe(256);
    expect(bucketPercentile(delta, 50)).toBe(1024);
    expect(bucketPercentile(delta, 99)).toBe(Number.POSITIVE_INFINITY);
    expect(bucketPercentile(histogramDelta([], [], 'none'), 50)).toBeNaN();
  });
});
