/**
 * The result of an `iop-bench` run: request counts, latency percentiles (TTFT, inter-token
 * latency, end-to-end; ms), throughput (requests/s, output tokens/s), errors by class and by HTTP
 * status, and the requests each agent served (`x-iop-agent-id`). `buildReport` gives the
 * machine-readable shape (`--json`); `formatReport` the table a person reads.
 */
import type { RequestResult } from './request.js';
import { summarize, type Summary } from './stats.js';

/** A Summary whose figures are null when there were no samples (JSON has no NaN). */
export type ReportSummary = { [K in keyof Summary]: number | null };

export interface BenchReport {
  requests: { total: number; ok: number; failed: number };
  /** Wall time of the run, ms. */
  wallMs: number;
  requestsPerSecond: number;
  /** Output tokens of successful requests per second of wall time. */
  outputTokensPerSecond: number;
  /** Time to first token (streams: first content delta; non-stream: whole body), successful requests, ms. */
  ttftMs: ReportSummary;
  /** Gaps between consecutive content deltas of streams, ms. */
  itlMs: ReportSummary;
  /** End-to-end latency of every request, ms. */
  latencyMs: ReportSummary;
  /** Failed requests by class: http_4xx, http_5xx, connection, stream_error. */
  errors: Record<string, number>;
  /** The error messages received and how often, most frequent first (at most 10). */
  errorMessages: Array<{ message: string; count: number }>;
  /** Failed requests by HTTP status (0 = no response). */
  errorStatuses: Record<string, number>;
  /** Requests per serving agent (`x-iop-agent-id`; `unknown` when absent). */
  agents: Record<string, number>;
}

function clean(summary: Summary): ReportSummary {
  const out = {} as ReportSummary;
  for (const [key, value] of Object.entries(summary) as Array<[keyof Summary, number]>)
    out[key] = Number.isFinite(value) ? Math.round(value * 100) / 100 : null;
  return out;
}

const bump = (counts: Record<string, number>, key: string) => (counts[key] = (counts[key] ?? 0) + 1);

export function buildReport(results: readonly RequestResult[], wallMs: number): BenchReport {
  const ttft: number[] = [];
  const itl: number[] = [];
  const latency: number[] = [];
  const errors: Record<string, number> = {};
  const messages: Record<string, number> = {};
  const errorStatuses: Record<string, number> = {};
  const agents: Record<string, number> = {};
  let ok = 0;
  let tokens = 0;
  for (const result of results) {
    latency.push(result.latencyMs);
    bump(agents, result.agent ?? 'unknown');
    if (result.ok) {
      ok++;
      tokens += result.outputTokens;
      if (result.ttftMs !== undefined) ttft.push(result.ttftMs);
      for (const gap of result.itlMs) itl.push(gap);
    } else {
      bump(errors, result.errorClass ?? 'unknown');
      if (result.errorMessage !== undefined)
        bump(messages, `${result.status === 0 ? result.errorClass : result.status}: ${result.errorMessage}`);
      bump(errorStatuses, String(result.status));
    }
  }
  const seconds = wallMs / 1000;
  return {
    requests: { total: results.length, ok, failed: results.length - ok },
    wallMs: Math.round(wallMs),
    requestsPerSecond: seconds > 0 ? Math.round((results.length / seconds) * 100) / 100 : 0,
    outputTokensPerSecond: seconds > 0 ? Math.round((tokens / seconds) * 10) / 10 : 0,
    ttftMs: clean(summarize(ttft)),
    itlMs: clean(summarize(itl)),
    latencyMs: clean(summarize(latency)),
    errors,
    errorMessages: Object.entries(messages)
      .sort(([, a], [, b]) => b - a)
      .slice(0, 10)
      .map(([message, count]) => ({ message, count })),
    errorStatuses,
    agents,
  };
}

const ms = (value: number | null) => (value === null ? 'n/a' : value < 10 ? value.toFixed(2) : value.toFixed(1));

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  return rows
    .map((row) =>
      row
        .map((cell, column) => (column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!)))
        .join('  '),
    )
    .join('\n');
}

/** The human-readable final table. */
export function formatReport(report: BenchReport): string {
  const lines: string[] = [];
  const { requests } = report;
  lines.push(
    `requests  ${requests.total} (ok ${requests.ok}, failed ${requests.failed}) in ${(report.wallMs / 1000).toFixed(2)} s`,
  );
  lines.push(`throughput  ${report.requestsPerSecond} req/s, ${report.outputTokensPerSecond} output tokens/s`);
  lines.push('');
  const row = (name: string, summary: ReportSummary) => [
    name,
    ms(summary.p50),
    ms(summary.p90),
    ms(summary.p99),
    ms(summary.mean),
    ms(summary.max),
    String(summary.count ?? 0),
  ];
  lines.push(
    table([
      ['latency (ms)', 'p50', 'p90', 'p99', 'mean', 'max', 'n'],
      row('TTFT', report.ttftMs),
      row('ITL', report.itlMs),
      row('end-to-end', report.latencyMs),
    ]),
  );
  lines.push('');
  const errorEntries = Object.entries(report.errors);
  lines.push(
    errorEntries.length === 0
      ? 'errors  none'
      : `errors  ${errorEntries.map(([name, count]) => `${name} ${count}`).join(', ')} (status ${Object.entries(
          report.errorStatuses,
        )
          .map(([status, count]) => `${status}: ${count}`)
          .join(', ')})`,
  );
  for (const { message, count } of report.errorMessages) lines.push(`  ${count} × ${message}`);
  const agents = Object.entries(report.agents).sort(([a], [b]) => a.localeCompare(b));
  if (agents.length > 0) {
    lines.push('');
    lines.push(
      table([
        ['agent', 'requests', 'share'],
        ...agents.map(([agent, count]) => [
          agent,
          String(count),
          `${((count / Math.max(1, requests.total)) * 100).toFixed(1)}%`,
        ]),
      ]),
    );
  }
  return lines.join('\n');
}
