/**
 * Turns `/admin/usage?group_by=day,<dimension>` rows into chart series: one per key, model or
 * agent, one value per UTC day of the range (0 on days without usage). Pure: no DOM.
 */
import type { UsageRow } from './types.js';

export type Dimension = 'key' | 'model' | 'agent';
export type Metric = 'tokens' | 'requests' | 'cost_usd';

export interface UsageSeries {
  /** `YYYY-MM-DD`, every day from the first to the last, ascending. */
  days: string[];
  /** Largest total first; beyond `maxSeries` the rest are summed as `other`. */
  series: Array<{ name: string; values: number[]; total: number }>;
}

const DAY_MS = 86_400_000;

/** True when the edge reports money: some row has a numeric `cost_usd`. */
export function hasCost(rows: readonly UsageRow[]): boolean {
  return rows.some((row) => typeof row.cost_usd === 'number');
}

/** A row's value of `metric` (`tokens`: input + output; a missing `cost_usd` is 0). */
export function metricOf(row: UsageRow, metric: Metric): number {
  if (metric === 'tokens') return row.input_tokens + row.output_tokens;
  if (metric === 'requests') return row.requests;
  return typeof row.cost_usd === 'number' ? row.cost_usd : 0;
}

/** Every UTC day from `from` to `to` inclusive, as `YYYY-MM-DD`. */
export function daysBetween(from: string, to: string): string[] {
  const days: string[] = [];
  for (let ms = Date.parse(`${from}T00:00:00Z`); ms <= Date.parse(`${to}T00:00:00Z`); ms += DAY_MS)
    days.push(new Date(ms).toISOString().slice(0, 10));
  return days;
}

/** The name a row is grouped under (a null group, e.g. a request before any agent, is `(none)`). */
export function groupName(row: UsageRow, dimension: Dimension): string {
  const value = row[dimension];
  return value === null || value === undefined || value === '' ? '(none)' : String(value);
}

/**
 * @param rows rows with `day` and `dimension` set.
 * @param range the first and last day shown (`YYYY-MM-DD`); default the rows' own.
 */
export function usageSeries(
  rows: readonly UsageRow[],
  dimension: Dimension,
  metric: Metric,
  range?: { from: string; to: string },
  maxSeries = 8,
): UsageSeries {
  const dated = rows.filter((row) => typeof row.day === 'string');
  const sortedDays = dated.map((row) => row.day as string).sort();
  const from = range?.from ?? sortedDays[0];
  const to = range?.to ?? sortedDays[sortedDays.length - 1];
  if (from === undefined || to === undefined) return { days: [], series: [] };
  const days = daysBetween(from, to);
  const index = new Map(days.map((day, i) => [day, i]));
  const byName = new Map<string, number[]>();
  for (const row of dated) {
    const at = index.get(row.day as string);
    if (at === undefined) continue;
    const name = groupName(row, dimension);
    const values = byName.get(name) ?? new Array<number>(days.length).fill(0);
    values[at] = (values[at] ?? 0) + metricOf(row, metric);
    byName.set(name, values);
  }
  const all = [...byName].map(([name, values]) => ({
    name,
    values,
    total: values.reduce((sum, value) => sum + value, 0),
  }));
  all.sort((a, b) => b.total - a.total || a.name.localeCompare(b.name));
  if (all.length <= maxSeries) return { days, series: all };
  const kept = all.slice(0, maxSeries - 1);
  const rest = all.slice(maxSeries - 1);
  const values = days.map((_day, i) => rest.reduce((sum, entry) => sum + (entry.values[i] ?? 0), 0));
  return {
    days,
    series: [...kept, { name: `other (${rest.length})`, values, total: values.reduce((sum, value) => sum + value, 0) }],
  };
}

/**
 * Running sums from the last series to the first: series i's bar reaches the sum of series i..n (a stacked bar chart
 * drawn back to front).
 */
export function stacked(series: UsageSeries['series']): number[][] {
  const out: number[][] = series.map((entry) => [...entry.values]);
  for (let i = out.length - 2; i >= 0; i--) out[i] = out[i]!.map((value, day) => value + (out[i + 1]![day] ?? 0));
  return out;
}
