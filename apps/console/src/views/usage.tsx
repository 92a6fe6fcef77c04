/**
 * Usage over time from the ledger (`/admin/usage`): per day, by key, model or agent, as a stacked
 * bar chart and a table of totals. Money (`cost_usd`) is shown where the edge reports it.
 */
import { useMemo, useState } from 'preact/hooks';
import { get } from '../api.js';
import { UsageChart } from '../chart.js';
import { formatCount, formatUsd } from '../format.js';
import { usePoll } from '../poll.js';
import type { ApiKey, List, UsageRow } from '../types.js';
import { ErrorNote, Facts } from '../ui.js';
import { groupName, hasCost, usageSeries, type Dimension, type Metric } from '../usage-series.js';

const DAY_MS = 86_400_000;
const DIMENSIONS: Array<[Dimension, string]> = [
  ['key', 'Key'],
  ['model', 'Model'],
  ['agent', 'Agent'],
];

/** The range's first day (UTC midnight, `days` days back including today) and today. */
function rangeOf(days: number): { fromMs: number; from: string; to: string } {
  const today = Math.floor(Date.now() / DAY_MS) * DAY_MS;
  const fromMs = today - (days - 1) * DAY_MS;
  return { fromMs, from: new Date(fromMs).toISOString().slice(0, 10), to: new Date(today).toISOString().slice(0, 10) };
}

interface Loaded {
  daily: UsageRow[];
  totals: UsageRow[];
  /** Key names by id (for the key dimension). */
  names: Map<string, string>;
}

async function loadUsage(dimension: Dimension, fromMs: number): Promise<Loaded> {
  const [daily, totals, keys] = await Promise.all([
    get<List<UsageRow>>(`/admin/usage?group_by=day,${dimension}&from=${fromMs}`),
    get<List<UsageRow>>(`/admin/usage?group_by=${dimension}&from=${fromMs}`),
    dimension === 'key' ? get<List<ApiKey>>('/admin/keys').catch(() => undefined) : undefined,
  ]);
  return {
    daily: daily.data,
    totals: totals.data,
    names: new Map((keys?.data ?? []).map((key) => [key.id, key.name])),
  };
}

/** The range's sums over every group. */
function RangeTotals({ rows, withCost }: { rows: UsageRow[]; withCost: boolean }) {
  const sum = (pick: (row: UsageRow) => number) => rows.reduce((total, row) => total + pick(row), 0);
  const items: Array<[string, string]> = [
    ['Requests', formatCount(sum((row) => row.requests))],
    ['Input tokens', formatCount(sum((row) => row.input_tokens))],
    ['Output tokens', formatCount(sum((row) => row.output_tokens))],
    ['Errors', formatCount(sum((row) => row.errors))],
  ];
  if (withCost) items.push(['Cost', formatUsd(sum((row) => row.cost_usd ?? 0))]);
  return <Facts items={items} />;
}

export function UsageView() {
  const [days, setDays] = useState(30);
  const [dimension, setDimension] = useState<Dimension>('key');
  const [metric, setMetric] = useState<Metric>('tokens');
  const range = useMemo(() => rangeOf(days), [days]);
  const { data, error } = usePoll(() => loadUsage(dimension, range.fromMs), 15_000, [dimension, range.fromMs]);
  const withCost = data !== undefined && (hasCost(data.daily) || hasCost(data.totals));
  const shownMetric: Metric = metric === 'cost_usd' && !withCost ? 'tokens' : metric;
  const series = useMemo(() => {
    if (data === undefined) return undefined;
    const built = usageSeries(data.daily, dimension, shownMetric, range);
    // Keys by their names in the legend (ids are in the table).
    return {
      ...built,
      series: built.series.map((entry) => ({ ...entry, name: data.names.get(entry.name) ?? entry.name })),
    };
  }, [data, dimension, shownMetric, range]);
  const format = shownMetric === 'cost_usd' ? formatUsd : formatCount;
  const totals = [...(data?.totals ?? [])].sort(
    (a, b) => b.input_tokens + b.output_tokens - (a.input_tokens + a.output_tokens),
  );
  const label = DIMENSIONS.find(([value]) => value === dimension)![1];
  const metricName =
    shownMetric === 'cost_usd' ? 'Cost (USD)' : shownMetric === 'requests' ? 'Requests' : 'Tokens (input + output)';
  return (
    <section aria-labelledby="usage-title">
      <h2 id="usage-title">Usage{withCost ? ' and cost' : ''}</h2>
      <form class="controls" onSubmit={(event) => event.preventDefault()}>
        <p>
          <label for="usage-range">Range</label>
          <select
            id="usage-range"
            value={String(days)}
            onChange={(event) => setDays(Number(event.currentTarget.value))}
          >
            <option value="7">Last 7 days</option>
            <option value="30">Last 30 days</option>
            <option value="90">Last 90 days</option>
          </select>
        </p>
        <fieldset>
          <legend>By</legend>
          {DIMENSIONS.map(([value, text]) => (
            <label key={value} class="choice">
              <input
                type="radio"
                name="usage-dimension"
                value={value}
                checked={dimension === value}
                onChange={() => setDimension(value)}
              />
              {text}
            </label>
          ))}
        </fieldset>
        <p>
          <label for="usage-metric">Show</label>
          <select
            id="usage-metric"
            value={shownMetric}
            onChange={(event) => setMetric(event.currentTarget.value as Metric)}
          >
            <option value="tokens">Tokens</option>
            <option value="requests">Requests</option>
            {withCost ? <option value="cost_usd">Cost (USD)</option> : null}
          </select>
        </p>
      </form>
      <ErrorNote error={error} />
      {totals.length === 0 ? null : <RangeTotals rows={totals} withCost={withCost} />}
      {series === undefined ? null : series.series.length === 0 ? (
        <p>No usage recorded in this range.</p>
      ) : (
        <UsageChart data={series} format={format} title={`${metricName} per day by ${label.toLowerCase()} (UTC)`} />
      )}
      {totals.length === 0 ? null : (
        <div class="scroll" tabIndex={0} role="region" aria-label={`Usage totals by ${label.toLowerCase()}`}>
          <table>
            <caption>
              Totals by {label.toLowerCase()}, {range.from} to {range.to} (UTC)
            </caption>
            <thead>
              <tr>
                <th scope="col">{label}</th>
                <th scope="col" class="num">
                  Requests
                </th>
                <th scope="col" class="num">
                  Input tokens
                </th>
                <th scope="col" class="num">
                  Cached input
                </th>
                <th scope="col" class="num">
                  Output tokens
                </th>
                <th scope="col" class="num">
                  Errors
                </th>
                {withCost ? (
                  <th scope="col" class="num">
                    Cost (USD)
                  </th>
                ) : null}
              </tr>
            </thead>
            <tbody>
              {totals.map((row) => (
                <tr key={groupName(row, dimension)}>
                  <th scope="row">
                    {groupName(row, dimension)}
                    {data?.names.has(groupName(row, dimension)) ? (
                      <div class="small muted">{data.names.get(groupName(row, dimension))}</div>
                    ) : null}
                  </th>
                  <td class="num">{formatCount(row.requests)}</td>
                  <td class="num">{formatCount(row.input_tokens)}</td>
                  <td class="num">{formatCount(row.cached_tokens)}</td>
                  <td class="num">{formatCount(row.output_tokens)}</td>
                  <td class="num">{formatCount(row.errors)}</td>
                  {withCost ? (
                    <td class="num">{typeof row.cost_usd === 'number' ? formatUsd(row.cost_usd) : '—'}</td>
                  ) : null}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
