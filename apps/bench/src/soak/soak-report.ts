/**
 * The soak's summary: requests completed and failed by class (dialect × stream × behaviour),
 * failure reasons, failures that overlapped a disruption (agent kill, edge restart), the in-flight
 * agreement figures, heartbeat ages, and RSS / open file descriptors at start and end.
 */
import type { Outcome } from './soak-clients.js';
import type { InFlightSample, ResourceSample } from './soak-observer.js';

export interface Window {
  name: string;
  startAt: number;
  endAt: number;
}

export interface SoakSummary {
  outcomes: readonly Outcome[];
  windows: readonly Window[];
  /** Largest disagreement seen while the load ran (heartbeat-delayed counts differ in passing). */
  maxDisagreementUnderLoad: number;
  /** The last sample after the load stopped and the counts settled (or the settle deadline passed). */
  atRest: readonly InFlightSample[];
  /** ms from the end of the load to the first sample with every count at 0, or null if never. */
  settleMs: number | null;
  maxHeartbeatAgeMs: number;
  heartbeatAgeAtEndMs: number;
  resourcesStart: readonly ResourceSample[];
  resourcesEnd: readonly ResourceSample[];
  backendAborted: number;
  elapsedMs: number;
}

function overlaps(outcome: Outcome, windows: readonly Window[]): boolean {
  return windows.some((window) => outcome.startedAt <= window.endAt && outcome.endedAt >= window.startAt);
}

function table(header: string[], rows: string[][]): string {
  const widths = header.map((cell, column) => Math.max(cell.length, ...rows.map((row) => row[column]!.length)));
  const line = (cells: string[]) =>
    cells
      .map((cell, column) => (column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!)))
      .join('  ');
  return [line(header), ...rows.map(line)].join('\n');
}

function top(counts: Map<string, number>, limit = 3): string {
  return [...counts.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, limit)
    .map(([name, count]) => `${name} ×${count}`)
    .join(', ');
}

/** Whether the soak passed: no orphaned backend request and full agreement at rest. */
export function soakPassed(summary: SoakSummary): boolean {
  return summary.atRest.every((sample) => sample.orphans === 0 && sample.disagreement === 0);
}

export function formatSummary(summary: SoakSummary): string {
  const classes = new Map<
    string,
    { total: number; ok: number; failed: number; disrupted: number; reasons: Map<string, number> }
  >();
  for (const outcome of summary.outcomes) {
    const key = `${outcome.dialect} ${outcome.stream ? 'stream' : 'non-stream'} ${outcome.behaviour}`;
    const entry = classes.get(key) ?? { total: 0, ok: 0, failed: 0, disrupted: 0, reasons: new Map<string, number>() };
    entry.total++;
    if (outcome.ok) entry.ok++;
    else {
      entry.failed++;
      if (overlaps(outcome, summary.windows)) entry.disrupted++;
      entry.reasons.set(outcome.errorClass ?? 'unknown', (entry.reasons.get(outcome.errorClass ?? 'unknown') ?? 0) + 1);
    }
    classes.set(key, entry);
  }
  const rows = [...classes.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([key, entry]) => [
      key,
      String(entry.total),
      String(entry.ok),
      String(entry.failed),
      String(entry.disrupted),
      top(entry.reasons),
    ]);
  const total = summary.outcomes.length;
  const ok = summary.outcomes.filter((outcome) => outcome.ok).length;
  const failed = summary.outcomes.filter((outcome) => !outcome.ok);
  rows.push([
    'all',
    String(total),
    String(ok),
    String(total - ok),
    String(failed.filter((outcome) => overlaps(outcome, summary.windows)).length),
    '',
  ]);

  const orphans = summary.atRest.reduce((sum, sample) => sum + sample.orphans, 0);
  const restDisagreement = Math.max(0, ...summary.atRest.map((sample) => sample.disagreement));
  const resourceRows = summary.resourcesStart.map((start) => {
    const end = summary.resourcesEnd.find((sample) => sample.name === start.name);
    const fmt = (value: number | undefined, digits = 0) =>
      value === undefined || Number.isNaN(value) ? '–' : value.toFixed(digits);
    return [
      start.name,
      fmt(start.rssMiB, 1),
      fmt(end?.rssMiB, 1),
      fmt(start.fds),
      fmt(end?.fds),
      end !== undefined && end.pid !== start.pid ? 'restarted' : '',
    ];
  });
  const verdict = (good: boolean) => (good ? 'ok' : 'FAIL');
  return [
    `soak: ${(summary.elapsedMs / 1000).toFixed(0)} s of load; disruptions: ${summary.windows.map((window) => `${window.name} (${((window.endAt - window.startAt) / 1000).toFixed(1)} s)`).join(', ') || 'none'}`,
    '',
    table(['class', 'requests', 'completed', 'failed', 'failed in disruption', 'failure classes'], rows),
    '',
    table(
      ['figure', 'value', 'check'],
      [
        ['orphaned backend requests at rest (sim in flight, no edge run)', String(orphans), verdict(orphans === 0)],
        [
          'largest edge/agent/backend in-flight disagreement at rest',
          String(restDisagreement),
          verdict(restDisagreement === 0),
        ],
        ['largest in-flight disagreement under load (heartbeat-delayed)', String(summary.maxDisagreementUnderLoad), ''],
        [
          'time for the counts to settle after the load (ms)',
          summary.settleMs === null ? 'never' : String(summary.settleMs),
          verdict(summary.settleMs !== null),
        ],
        ['oldest heartbeat age seen (ms)', String(summary.maxHeartbeatAgeMs), ''],
        ['oldest heartbeat age at the end (ms)', String(summary.heartbeatAgeAtEndMs), ''],
        ['backend requests aborted by their client (all sims)', String(summary.backendAborted), ''],
      ],
    ),
    '',
    'at rest, per agent: ' +
      summary.atRest
        .map((sample) => `${sample.id} edge ${sample.edge} / agent ${sample.reported} / backend ${sample.backend}`)
        .join('; '),
    '',
    table(['process', 'RSS MiB start', 'RSS MiB end', 'fds start', 'fds end', ''], resourceRows),
  ].join('\n');
}
