/**
 * What a multi-turn run reports, per routing policy: TTFT p50/p90/p99 and mean, ITL p99, output
 * tokens per second, prompt tokens served from cache (measured, where the backends tell) beside
 * the ideal, requests per agent and errors; the raw samples as JSON; a TTFT CDF per policy as SVG.
 * Percentiles come from HdrHistogram (hdr-histogram-js, 3 significant digits, microseconds); the
 * picture is a Vega spec rendered to SVG (vega, no browser).
 */
import { writeFileSync } from 'node:fs';
import * as hdr from 'hdr-histogram-js';
import * as vega from 'vega';
import type { SessionSample } from './session-runner.js';
import type { IdealCache } from './ideal-cache.js';

export interface PolicyRun {
  policy: string;
  samples: SessionSample[];
  wallMs: number;
  ideal: IdealCache;
  /** Prompt tokens the backends served from cache (their own counters), when known. */
  measured?: { queriedTokens: number; hitTokens: number };
  /**
   * The backends' own TTFT (vLLM's `time_to_first_token_seconds`: queue and prefill as the GPU model schedules them,
   * without the path's or the host's delays), summed over requests, ms, when known.
   */
  gpuTtft?: { sumMs: number; count: number };
}

export interface PolicySummary {
  policy: string;
  requests: number;
  errors: number;
  ttftMs: { p50: number; p90: number; p99: number; mean: number } | null;
  /** Mean of the backends' own TTFT, ms (see `PolicyRun.gpuTtft`). */
  gpuTtftMeanMs: number | null;
  itlP99Ms: number | null;
  outputTokensPerS: number;
  cacheHitShare: number | null;
  idealHitShare: number;
  perAgent: Record<string, number>;
}

function histogram(values: Iterable<number>): hdr.Histogram | undefined {
  const histogram = hdr.build({
    lowestDiscernibleValue: 1,
    highestTrackableValue: 3_600_000_000,
    numberOfSignificantValueDigits: 3,
  });
  let count = 0;
  for (const value of values) {
    histogram.recordValue(Math.max(1, Math.round(value * 1000)));
    count++;
  }
  return count === 0 ? undefined : histogram;
}

const ms = (micros: number) => Math.round(micros) / 1000;

export function summarize(run: PolicyRun): PolicySummary {
  const ok = run.samples.filter((sample) => sample.ok);
  const ttft = histogram(ok.flatMap((sample) => (sample.ttftMs === undefined ? [] : [sample.ttftMs])));
  const itl = histogram(ok.flatMap((sample) => sample.itlMs));
  const perAgent: Record<string, number> = {};
  for (const sample of ok) perAgent[sample.agent ?? '?'] = (perAgent[sample.agent ?? '?'] ?? 0) + 1;
  const outputTokens = ok.reduce((sum, sample) => sum + sample.outputTokens, 0);
  return {
    policy: run.policy,
    requests: run.samples.length,
    errors: run.samples.length - ok.length,
    ttftMs:
      ttft === undefined
        ? null
        : {
            p50: ms(ttft.getValueAtPercentile(50)),
            p90: ms(ttft.getValueAtPercentile(90)),
            p99: ms(ttft.getValueAtPercentile(99)),
            mean: ms(ttft.mean),
          },
    gpuTtftMeanMs: run.gpuTtft === undefined || run.gpuTtft.count === 0 ? null : run.gpuTtft.sumMs / run.gpuTtft.count,
    itlP99Ms: itl === undefined ? null : ms(itl.getValueAtPercentile(99)),
    outputTokensPerS: run.wallMs > 0 ? (outputTokens * 1000) / run.wallMs : 0,
    cacheHitShare:
      run.measured === undefined || run.measured.queriedTokens === 0
        ? null
        : run.measured.hitTokens / run.measured.queriedTokens,
    idealHitShare: run.ideal.queriedTokens === 0 ? 0 : run.ideal.hitTokens / run.ideal.queriedTokens,
    perAgent,
  };
}

const fixed = (value: number | null | undefined, digits = 0) =>
  value === null || value === undefined ? '–' : value.toFixed(digits);
const percent = (value: number | null) => (value === null ? '–' : `${(value * 100).toFixed(1)} %`);

/** The side-by-side table (Markdown, so it pastes into the docs as is). */
export function formatTable(summaries: readonly PolicySummary[]): string {
  const header = [
    'policy',
    'requests',
    'errors',
    'TTFT p50 ms',
    'p90',
    'p99',
    'mean',
    'GPU TTFT mean',
    'ITL p99 ms',
    'output tok/s',
    'prefill from cache',
    'ideal',
    'requests per agent',
  ];
  const rows = summaries.map((summary) => [
    summary.policy,
    String(summary.requests),
    String(summary.errors),
    fixed(summary.ttftMs?.p50),
    fixed(summary.ttftMs?.p90),
    fixed(summary.ttftMs?.p99),
    fixed(summary.ttftMs?.mean),
    fixed(summary.gpuTtftMeanMs),
    fixed(summary.itlP99Ms, 1),
    fixed(summary.outputTokensPerS),
    percent(summary.cacheHitShare),
    percent(summary.idealHitShare),
    Object.entries(summary.perAgent)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([, count]) => count)
      .join(' / '),
  ]);
  return [header, header.map(() => '---'), ...rows].map((cells) => `| ${cells.join(' | ')} |`).join('\n');
}

/** The raw samples (messages left out: they can be megabytes) as JSON. */
export function writeSamples(path: string, runs: readonly PolicyRun[]): void {
  const data = runs.map((run) => ({
    policy: run.policy,
    wallMs: run.wallMs,
    samples: run.samples.map(({ messages: _messages, ...sample }) => sample),
  }));
  writeFileSync(path, `${JSON.stringify(data)}\n`);
}

/** An SVG of the TTFT CDF of each policy (log-scale x). */
export async function ttftCdfSvg(runs: readonly PolicyRun[], title: string): Promise<string> {
  const points = runs.flatMap((run) => {
    const values = run.samples
      .flatMap((sample) => (sample.ok && sample.ttftMs !== undefined ? [sample.ttftMs] : []))
      .sort((a, b) => a - b);
    return values.map((ttft, index) => ({
      policy: run.policy,
      ttft: Math.max(1, ttft),
      share: (index + 1) / values.length,
    }));
  });
  const spec: vega.Spec = {
    $schema: 'https://vega.github.io/schema/vega/v5.json',
    width: 640,
    height: 360,
    padding: 8,
    title: { text: title },
    data: [{ name: 'points', values: points }],
    scales: [
      { name: 'x', type: 'log', domain: { data: 'points', field: 'ttft' }, range: 'width', nice: true },
      { name: 'y', type: 'linear', domain: [0, 1], range: 'height' },
      { name: 'color', type: 'ordinal', domain: { data: 'points', field: 'policy' }, range: 'category' },
    ],
    axes: [
      { orient: 'bottom', scale: 'x', title: 'time to first token (ms, log scale)', grid: true },
      { orient: 'left', scale: 'y', title: 'share of requests', grid: true, format: '%' },
    ],
    legends: [{ fill: 'color', title: 'routing policy', orient: 'bottom-right' }],
    marks: [
      {
        type: 'group',
        from: { facet: { name: 'series', data: 'points', groupby: 'policy' } },
        marks: [
          {
            type: 'line',
            from: { data: 'series' },
            encode: {
              enter: {
                x: { scale: 'x', field: 'ttft' },
                y: { scale: 'y', field: 'share' },
                stroke: { scale: 'color', field: 'policy' },
                strokeWidth: { value: 2 },
              },
            },
          },
        ],
      },
    ],
  };
  const view = new vega.View(vega.parse(spec), { renderer: 'none' });
  const svg = await view.toSVG();
  view.finalize();
  return svg;
}
