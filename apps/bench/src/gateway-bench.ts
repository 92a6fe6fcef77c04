#!/usr/bin/env node
/**
 * `npm run bench`: what iop adds on top of a backend. The same load is sent directly to the sim and
 * through edge → gRPC tunnel → agent → sim, in one run, on loopback:
 * - non-stream and stream; concurrency 1, 16 and 64;
 * - an instant sim (capacity: the gateway's own cost) and a paced one (50 ms to first token,
 *   5 ms per token: what users feel).
 * Prints p50/p99 latency and TTFT, requests/s, streamed tokens/s, CPU time per request of the
 * edge and the agent (from /proc), their peak RSS, and the overhead against direct, in ms and as
 * a ratio. Stops by itself. `BENCH_SCALE=0.2` runs a fifth of the requests (a quick look);
 * `BENCH_SIMS=instant` and `BENCH_CONCURRENCY=1,64` run only those rows.
 */
import os from 'node:os';
import { launch, procStats, type Proc } from './processes.js';
import { summarize } from './stats.js';
import { runWorkload } from './workload.js';
import type { RequestResult } from './request.js';

const API_KEY = 'sk-iop-bench-key-0001';
const JOIN_TOKEN = 'iop-bench-join-token';
const OUTPUT_TOKENS = 20;
const scale = Number(process.env.BENCH_SCALE ?? '1');
const profile = process.env.BENCH_CPU_PROF === '1';

interface SimKind {
  name: 'instant' | 'paced';
  args: string[];
  requests: Record<number, number>;
}

const SIMS: SimKind[] = [
  { name: 'instant', args: ['--ttft-ms', '0', '--itl-ms', '0'], requests: { 1: 1000, 16: 2000, 64: 3000 } },
  { name: 'paced', args: ['--ttft-ms', '50', '--itl-ms', '5'], requests: { 1: 60, 16: 480, 64: 1280 } },
];
const CONCURRENCY = process.env.BENCH_CONCURRENCY === undefined ? [1, 16, 64] : process.env.BENCH_CONCURRENCY.split(',').map(Number);
const simNames = process.env.BENCH_SIMS?.split(',');

interface Row {
  sim: string;
  mode: 'non-stream' | 'stream';
  concurrency: number;
  target: 'direct' | 'iop';
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

async function startStack(sim: SimKind): Promise<{ sim: Proc; simUrl: string; edge: Proc; edgeUrl: string; agent: Proc }> {
  const simProc = launch('sim', 'apps/sim/dist/main.js', ['--port', '0', '--host', '127.0.0.1', '--models', 'bench-model', '--output-tokens', String(OUTPUT_TOKENS), ...sim.args]);
  const simPort = (await simProc.ready()).port as number;
  const prof = (name: string) => (profile ? ['--cpu-prof', `--cpu-prof-dir=${process.cwd()}/profiles`, `--cpu-prof-name=${name}-${sim.name}.cpuprofile`] : []);
  const edge = launch('edge', 'apps/edge/dist/main.js', ['--port', '0', '--tunnel-port', '0', '--api-keys', API_KEY, '--join-tokens', JOIN_TOKEN], { IOP_LOG_LEVEL: 'info' }, prof('edge'));
  const ready = await edge.ready();
  const agent = launch(
    'agent',
    'apps/agent/dist/main.js',
    ['--edge', `http://127.0.0.1:${ready.tunnelPort as number}`, '--join-token', JOIN_TOKEN, '--agent-id', 'bench-agent', '--backend', 'openai', '--backend-url', `http://127.0.0.1:${simPort}`, '--models', 'bench-model', '--max-concurrency', '256'],
    { IOP_LOG_LEVEL: 'info' },
    prof('agent'),
  );
  await agent.ready(30_000);
  for (const proc of [simProc, edge, agent]) proc.detach();
  return { sim: simProc, simUrl: `http://127.0.0.1:${simPort}`, edge, edgeUrl: `http://127.0.0.1:${ready.port as number}`, agent };
}

function rowOf(base: Omit<Row, 'requests' | 'errors' | 'rps' | 'latencyP50' | 'latencyP99' | 'ttftP50' | 'ttftP99' | 'itlP99' | 'tokensPerSecond'>, results: RequestResult[], wallMs: number): Row {
  const ok = results.filter((result) => result.ok);
  const latency = summarize(ok.map((result) => result.latencyMs));
  const ttft = summarize(ok.flatMap((result) => (result.ttftMs === undefined ? [] : [result.ttftMs])));
  const itl = summarize(ok.flatMap((result) => result.itlMs));
  const tokens = ok.reduce((sum, result) => sum + result.outputTokens, 0);
  return {
    ...base,
    requests: results.length,
    errors: results.length - ok.length,
    rps: (results.length / wallMs) * 1000,
    latencyP50: latency.p50,
    latencyP99: latency.p99,
    ttftP50: ttft.p50,
    ttftP99: ttft.p99,
    itlP99: itl.p99,
    tokensPerSecond: (tokens / wallMs) * 1000,
  };
}

async function measure(stack: Awaited<ReturnType<typeof startStack>>, sim: SimKind, stream: boolean, concurrency: number, target: 'direct' | 'iop'): Promise<Row> {
  const requests = Math.max(concurrency * 2, Math.round((sim.requests[concurrency] ?? 500) * scale));
  const origin = target === 'direct' ? stack.simUrl : stack.edgeUrl;
  // Warm-up: connections, and the JIT (optimizing compiles run on background threads whose CPU
  // time would otherwise land on the first row). Paced requests take 150 ms each: fewer of them.
  const warmUp = sim.name === 'instant' ? Math.max(300, concurrency * 4) : Math.max(16, concurrency * 2);
  await runWorkload({ origin, spec: { dialect: 'chat', model: 'bench-model', stream, apiKey: API_KEY }, promptWords: { min: 8, max: 32 }, maxTokens: { min: OUTPUT_TOKENS, max: OUTPUT_TOKENS }, mode: { kind: 'closed', concurrency }, requests: warmUp });
  const before = { edge: procStats(stack.edge.pid), agent: procStats(stack.agent.pid) };
  let edgeRss = before.edge.rssBytes;
  let agentRss = before.agent.rssBytes;
  const sampler = setInterval(() => {
    edgeRss = Math.max(edgeRss, procStats(stack.edge.pid).rssBytes);
    agentRss = Math.max(agentRss, procStats(stack.agent.pid).rssBytes);
  }, 50);
  const { results, wallMs } = await runWorkload({
    origin,
    spec: { dialect: 'chat', model: 'bench-model', stream, apiKey: API_KEY },
    promptWords: { min: 8, max: 32 },
    maxTokens: { min: OUTPUT_TOKENS, max: OUTPUT_TOKENS },
    mode: { kind: 'closed', concurrency },
    requests,
  });
  clearInterval(sampler);
  const after = { edge: procStats(stack.edge.pid), agent: procStats(stack.agent.pid) };
  const row = rowOf({ sim: sim.name, mode: stream ? 'stream' : 'non-stream', concurrency, target }, results, wallMs);
  if (target === 'iop') {
    row.edgeCpuMsPerRequest = (after.edge.cpuMs - before.edge.cpuMs) / results.length;
    row.agentCpuMsPerRequest = (after.agent.cpuMs - before.agent.cpuMs) / results.length;
    row.edgeRssMiB = edgeRss / 1024 / 1024;
    row.agentRssMiB = agentRss / 1024 / 1024;
  }
  return row;
}

const fixed = (value: number | undefined, digits = 2) => (value === undefined || Number.isNaN(value) ? '-' : value.toFixed(digits));

function printTable(rows: Row[]): void {
  const header = ['sim', 'mode', 'conc', 'target', 'reqs', 'err', 'req/s', 'p50 ms', 'p99 ms', 'TTFT p50', 'TTFT p99', 'ITL p99', 'tok/s', 'edge CPU ms/req', 'agent CPU ms/req', 'edge RSS MiB', 'agent RSS MiB'];
  const lines = rows.map((row) => [
    row.sim, row.mode, String(row.concurrency), row.target, String(row.requests), String(row.errors), fixed(row.rps, 0), fixed(row.latencyP50), fixed(row.latencyP99), fixed(row.ttftP50), fixed(row.ttftP99), fixed(row.itlP99),
    fixed(row.tokensPerSecond, 0), fixed(row.edgeCpuMsPerRequest, 3), fixed(row.agentCpuMsPerRequest, 3), fixed(row.edgeRssMiB, 0), fixed(row.agentRssMiB, 0),
  ]);
  console.log(`| ${header.join(' | ')} |`);
  console.log(`|${header.map(() => '---').join('|')}|`);
  for (const line of lines) console.log(`| ${line.join(' | ')} |`);
}

function printOverhead(rows: Row[]): void {
  console.log('\nOverhead of iop (edge + tunnel + agent) against direct:');
  console.log('| sim | mode | conc | added p50 latency ms | ratio p50 | added p50 TTFT ms | added p99 ITL ms | edge+agent CPU ms/req |');
  console.log('|---|---|---|---|---|---|---|---|');
  for (const iop of rows.filter((row) => row.target === 'iop')) {
    const direct = rows.find((row) => row.target === 'direct' && row.sim === iop.sim && row.mode === iop.mode && row.concurrency === iop.concurrency)!;
    const cpu = (iop.edgeCpuMsPerRequest ?? 0) + (iop.agentCpuMsPerRequest ?? 0);
    console.log(
      `| ${iop.sim} | ${iop.mode} | ${iop.concurrency} | ${fixed(iop.latencyP50 - direct.latencyP50)} | ${fixed(iop.latencyP50 / direct.latencyP50)} | ${fixed(iop.ttftP50 - direct.ttftP50)} | ${iop.mode === 'stream' ? fixed(iop.itlP99 - direct.itlP99) : '-'} | ${fixed(cpu, 3)} |`,
    );
  }
}

async function main(): Promise<void> {
  console.log(`iop gateway benchmark — ${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}, scale ${scale}`);
  console.log(`${OUTPUT_TOKENS} output tokens per request; load generator, sim, edge and agent share this machine.\n`);
  const rows: Row[] = [];
  for (const sim of SIMS) {
    if (simNames !== undefined && !simNames.includes(sim.name)) continue;
    const stack = await startStack(sim);
    try {
      for (const stream of [false, true]) {
        for (const concurrency of CONCURRENCY) {
          for (const target of ['direct', 'iop'] as const) {
            const row = await measure(stack, sim, stream, concurrency, target);
            rows.push(row);
            process.stderr.write(`  ${sim.name} ${row.mode} c=${concurrency} ${target}: ${fixed(row.rps, 0)} req/s, p50 ${fixed(row.latencyP50)} ms, errors ${row.errors}\n`);
          }
        }
      }
    } finally {
      await Promise.all([stack.agent.kill('SIGTERM'), stack.edge.kill('SIGTERM')]);
      await stack.sim.kill('SIGTERM');
    }
  }
  console.log('');
  printTable(rows);
  printOverhead(rows);
  if (process.env.BENCH_JSON !== undefined) console.log(JSON.stringify(rows));
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
