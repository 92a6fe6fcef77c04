import fc from 'fast-check';
import type { UsageRow } from '../../src/types.js';
import { daysBetween, hasCost, metricOf, stacked, usageSeries } from '../../src/usage-series.js';

function row(day: string, key: string | null, input: number, output: number, extra: Partial<UsageRow> = {}): UsageRow {
  return {
    day,
    key,
    requests: 1,
    input_tokens: input,
    output_tokens: output,
    cached_tokens: 0,
    reasoning_tokens: 0,
    errors: 0,
    estimated_requests: 0,
    ...extra,
  };
}

describe('usageSeries', () => {
  it('fills every day of the range and orders series by total', () => {
    const rows = [row('2026-12-01', 'a', 10, 5), row('2026-12-03', 'b', 100, 0), row('2026-12-03', 'a', 1, 1)];
    expect(usageSeries(rows, 'key', 'tokens', { from: '2026-11-30', to: '2026-12-03' })).toEqual({
      days: ['2026-11-30', '2026-12-01', '2026-12-02', '2026-12-03'],
      series: [
        { name: 'b', values: [0, 0, 0, 100], total: 100 },
        { name: 'a', values: [0, 15, 0, 2], total: 17 },
      ],
    });
  });

  it('names a null group `(none)` and sums series beyond the limit as `other`', () => {
    const rows = ['a', 'b', 'c', null].map((key, i) => row('2026-12-01', key, 10 * (4 - i), 0));
    const series = usageSeries(rows, 'key', 'tokens', undefined, 3);
    expect(series.series.map((entry) => [entry.name, entry.total])).toEqual([
      ['a', 40],
      ['b', 30],
      ['other (2)', 30],
    ]);
    expect(usageSeries([row('2026-12-01', null, 1, 0)], 'key', 'tokens').series[0]!.name).toBe('(none)');
  });

  it('reads cost_usd where present and tolerates its absence', () => {
    const priced = row('2026-12-01', 'a', 1, 1, { cost_usd: 0.25 });
    const unpriced = row('2026-12-01', 'b', 1, 1);
    expect(hasCost([unpriced])).toBe(false);
    expect(hasCost([unpriced, priced])).toBe(true);
    expect([metricOf(priced, 'cost_usd'), metricOf(unpriced, 'cost_usd')]).toEqual([0.25, 0]);
    expect(usageSeries([priced, unpriced], 'key', 'cost_usd').series.map((entry) => entry.total)).toEqual([0.25, 0]);
  });

  it('spans month and year ends in UTC days', () => {
    expect(daysBetween('2026-12-30', '2027-01-02')).toEqual(['2026-12-30', '2026-12-31', '2027-01-01', '2027-01-02']);
  });

  it('property: the series keep every unit of the rows in range, and the first stacked row is the daily total', () => {
    const day = fc
      .integer({ min: 0, max: 20 })
      .map((offset) => new Date(Date.UTC(2026, 10, 20 + offset)).toISOString().slice(0, 10));
    const rows = fc.array(
      fc
        .record({ day, key: fc.constantFrom('a', 'b', 'c', 'd', null), input: fc.nat(1000), output: fc.nat(1000) })
        .map((r) => row(r.day, r.key, r.input, r.output)),
      { maxLength: 40 },
    );
    fc.assert(
      fc.property(rows, fc.integer({ min: 1, max: 5 }), (list, maxSeries) => {
        const range = { from: '2026-11-25', to: '2026-12-05' };
        const built = usageSeries(list, 'key', 'tokens', range, maxSeries);
        const inRange = list.filter((entry) => entry.day! >= range.from && entry.day! <= range.to);
        const sum = (values: number[]) => values.reduce((total, value) => total + value, 0);
        expect(sum(built.series.map((entry) => entry.total))).toBe(
          sum(inRange.map((entry) => metricOf(entry, 'tokens'))),
        );
        expect(built.series.length).toBeLessThanOrEqual(maxSeries);
        const top = stacked(built.series)[0] ?? built.days.map(() => 0);
        expect(top).toEqual(
          built.days.map((d) =>
            sum(inRange.filter((entry) => entry.day === d).map((entry) => metricOf(entry, 'tokens'))),
          ),
        );
      }),
    );
  });
});
