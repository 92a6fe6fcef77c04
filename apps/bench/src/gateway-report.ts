/** The rows of `npm run bench` (gateway-bench.ts) and how they are printed: the table, then the overhead. */
/**
 * `direct`: straight to the sim; `iop`: edge → tunnel → agent → sim; `edge`: an edge with the sim as a direct provider.
 */
export type Target = 'direct' | 'iop' | 'edge';
export interface Row {
  sim: string;
  mode: 'non-stream' | 'stream';
  concurrency: number;
  target: Target;
  requests: number;
  errors: number;
  rps: number;
  latencyP50: number;
  latencyP99: number;
  ttftP50: number;
  ttftP99: number;
  itlP99: number;
  tokensPerSecond: number;
  edgeCpuMsPerRequest?: number;
  agentCpuMsPerRequest?: number;
  edgeRssMiB?: number;
  agentRssMiB?: number;
}

export const fixed = (value: number | undefined, digits = 2) =>
  value === undefined || Number.isNaN(value) ? '-' : value.toFixed(digits);

export function printTable(rows: Row[]): void {
  const header = [
    'sim',
    'mode',
    'conc',
    'target',
    'reqs',
    'err',
    'req/s',
    'p50 ms',
    'p99 ms',
    'TTFT p50',
    'TTFT p99',
    'ITL p99',
    'tok/s',
    'edge CPU ms/req',
    'agent CPU ms/req',
    'edge RSS MiB',
    'agent RSS MiB',
  ];
  const lines = rows.map((row) => [
    row.sim,
    row.mode,
    String(row.concurrency),
    row.target,
    String(row.requests),
    String(row.errors),
    fixed(row.rps, 0),
    fixed(row.latencyP50),
    fixed(row.latencyP99),
    fixed(row.ttftP50),
    fixed(row.ttftP99),
    fixed(row.itlP99),
    fixed(row.tokensPerSecond, 0),
    fixed(row.edgeCpuMsPerRequest, 3),
    fixed(row.agentCpuMsPerRequest, 3),
    fixed(row.edgeRssMiB, 0),
    fixed(row.agentRssMiB, 0),
  ]);
  console.log(`| ${header.join(' | ')} |`);
  console.log(`|${header.map(() => '---').join('|')}|`);
  for (const line of lines) console.log(`| ${line.join(' | ')} |`);
}

export function printOverhead(rows: Row[]): void {
  console.log('\nOverhead against direct (iop: edge + tunnel + agent; edge: the edge alone, direct provider):');
  console.log(
    '| sim | mode | conc | target | added p50 latency ms | ratio p50 | added p50 TTFT ms | added p99 ITL ms | CPU ms/req (edge + agent) |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|');
  for (const iop of rows.filter((row) => row.target !== 'direct')) {
    const direct = rows.find(
      (row) =>
        row.target === 'direct' && row.sim === iop.sim && row.mode === iop.mode && row.concurrency === iop.concurrency,
    );
    if (direct === undefined) continue; // `BENCH_TARGETS` without direct: nothing to compare with
    const cpu = (iop.edgeCpuMsPerRequest ?? 0) + (iop.agentCpuMsPerRequest ?? 0);
    console.log(
      `| ${iop.sim} | ${iop.mode} | ${iop.concurrency} | ${iop.target} | ${fixed(iop.latencyP50 - direct.latencyP50)} | ${fixed(iop.latencyP50 / direct.latencyP50)} | ${fixed(iop.ttftP50 - direct.ttftP50)} | ${iop.mode === 'stream' ? fixed(iop.itlP99 - direct.itlP99) : '-'} | ${fixed(cpu, 3)} |`,
    );
  }
}
