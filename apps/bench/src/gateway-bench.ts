#!/usr/bin/env node
/**
 * `npm run bench`: what iop adds on top of a backend. The same load is sent directly to the sim,
 * through edge → gRPC tunnel → agent → sim (`iop`), and through an edge alone with the sim as a
 * direct provider (`edge`), in one run, on loopback:
 * - non-stream and stream; concurrency 1, 16 and 64;
 * - an instant sim (capacity: the gateway's own cost) and a paced one (50 ms to first token,
 *   5 ms per token: what users feel).
 * Prints p50/p99 latency and TTFT, requests/s, streamed tokens/s, CPU time per request of the
 * edge and the agent (from /proc), their peak RSS, and the overhead against direct, in ms and as
 * a ratio. Stops by itself. `BENCH_SCALE=0.2` runs a fifth of the requests (a quick look);
 * `BENCH_SIMS=instant`, `BENCH_CONCURRENCY=1,64` and `BENCH_TARGETS=direct,iop` run only those rows.
 * Then `BENCH_IDLE_STREAMS` (default 10 000; 0 skips it) streams are held open at once on a sim
 * that has not answered yet: the edge's memory per idle stream (idle-streams.ts).
 *
 * Steady state: a server runs for days, so each stack first serves `BENCH_WARMUP` (default
 * 10 000) non-stream and as many streamed requests per target at concurrency 64, on the model
 * `bench-model@instant` (no delays, even on the paced sim). CPU per request falls by about half
 * over a fresh process's first ~15 000 requests (V8 optimizes the request path's functions in
 * tiers, the young generation grows); rows measured before that bill the warm-up to the gateway.
 *
 * CPUs: the gateway runs on a core of its own, the load generator and the sim on the others
 * (cpu-pinning.ts; `BENCH_PIN=0` shares every CPU). `BENCH_GATEWAY_NODE_ARGS` adds flags to the
 * `node` command of the edges and agents (V8 heap flags such as `--max-semi-space-size=8`).
 *
 * `npm run bench -- lone`: one request at a time instead (lone-request.ts).
 */
import os from 'node:os';
import { cpuPlan, pinProcess, type CpuPlan } from './cpu-pinning.js';
import { measureIdleStreams, type IdleStreamsResult } from './idle-streams.js';
import { loneMain } from './lone-request.js';
import { procStats } from './processes.js';
import { summarize } from './stats.js';
import { runWorkload } from './workload.js';
import type { RequestResult } from './request.js';
import { fixed, printOverhead, printTable, type Row, type Target } from './gateway-report.js';
import {
  API_KEY,
  INSTANT_MODEL,
  MODEL,
  OUTPUT_TOKENS,
  startStack,
  stopStack,
  type SimKind,
  type Stack,
} from './gateway-stack.js';

const scale = Number(process.env.BENCH_SCALE ?? '1');
/** The gateway on a core of its own, load generator and sim on the others (cpu-pinning.ts); a string says why not. */
const plan = cpuPlan();
const pins: CpuPlan | undefined = typeof plan === 'string' ? undefined : plan;

const SIMS: SimKind[] = [
  { name: 'instant', args: ['--ttft-ms', '0', '--itl-ms', '0'], requests: { 1: 1000, 16: 2000, 64: 3000 } },
  { name: 'paced', args: ['--ttft-ms', '50', '--itl-ms', '5'], requests: { 1: 60, 16: 480, 64: 1280 } },
];
const CONCURRENCY =
  process.env.BENCH_CONCURRENCY === undefined ? [1, 16, 64] : process.env.BENCH_CONCURRENCY.split(',').map(Number);
const simNames = process.env.BENCH_SIMS?.split(',');

const TARGETS: Target[] =
  process.env.BENCH_TARGETS === undefined
    ? ['direct', 'iop', 'edge']
    : (process.env.BENCH_TARGETS.split(',') as Target[]);
const IDLE_STREAMS = Number(process.env.BENCH_IDLE_STREAMS ?? '10000');
/** Requests per target and mode before any row (see the header). */
const WARMUP = Math.round(Number(process.env.BENCH_WARMUP ?? '10000') * scale);

function rowOf(
  base: Omit<
    Row,
    'requests' | 'errors' | 'rps' | 'latencyP50' | 'latencyP99' | 'ttftP50' | 'ttftP99' | 'itlP99' | 'tokensPerSecond'
  >,
  results: RequestResult[],
  wallMs: number,
): Row {
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

function originOf(stack: Stack, target: Target): string {
  return target === 'direct' ? stack.simUrl : target === 'edge' ? stack.edgeAloneUrl! : stack.edgeUrl;
}

/**
 * `requests` Chat Completions of 8–32 prompt words and `OUTPUT_TOKENS` answer tokens, `concurrency` clients in a closed
 * loop.
 */
function closedLoad(
  origin: string,
  model: string,
  stream: boolean,
  concurrency: number,
  requests: number,
): ReturnType<typeof runWorkload> {
  return runWorkload({
    origin,
    spec: { dialect: 'chat', model, stream, apiKey: API_KEY },
    promptWords: { min: 8, max: 32 },
    maxTokens: { min: OUTPUT_TOKENS, max: OUTPUT_TOKENS },
    mode: { kind: 'closed', concurrency },
    requests,
  });
}

/**
 * Brings every target of a new stack to steady state (see the header): `WARMUP` instant requests per target and mode at
 * concurrency 64.
 */
async function warmToSteadyState(stack: Stack): Promise<void> {
  if (WARMUP <= 0) return;
  for (const target of TARGETS) {
    for (const stream of [false, true]) {
      await closedLoad(originOf(stack, target), INSTANT_MODEL, stream, 64, WARMUP);
    }
  }
}

async function measure(stack: Stack, sim: SimKind, stream: boolean, concurrency: number, target: Target): Promise<Row> {
  const requests = Math.max(concurrency * 2, Math.round((sim.requests[concurrency] ?? 500) * scale));
  const origin = originOf(stack, target);
  const edgePid = target === 'edge' ? stack.edgeAlone!.pid : stack.edge.pid;
  // Warm-up of the row's own shape: connections at this concurrency, and optimizing compiles on
  // V8's background threads (their CPU time would otherwise land on the row). Paced requests take
  // 150 ms each: ~2 s of them, long enough for a young generation that shrank during the lighter
  // rows before to grow back (README "Performance": the transition itself is measured apart).
  const warmUp = sim.name === 'instant' ? Math.max(300, concurrency * 4) : Math.max(16, concurrency * 13);
  await closedLoad(origin, MODEL, stream, concurrency, warmUp);
  const before = { edge: procStats(edgePid), agent: procStats(stack.agent.pid) };
  let edgeRss = before.edge.rssBytes;
  let agentRss = before.agent.rssBytes;
  const sampler = setInterval(() => {
    edgeRss = Math.max(edgeRss, procStats(edgePid).rssBytes);
    agentRss = Math.max(agentRss, procStats(stack.agent.pid).rssBytes);
  }, 50);
  const { results, wallMs } = await closedLoad(origin, MODEL, stream, concurrency, requests);
  clearInterval(sampler);
  const after = { edge: procStats(edgePid), agent: procStats(stack.agent.pid) };
  const row = rowOf({ sim: sim.name, mode: stream ? 'stream' : 'non-stream', concurrency, target }, results, wallMs);
  if (target !== 'direct') {
    row.edgeCpuMsPerRequest = (after.edge.cpuMs - before.edge.cpuMs) / results.length;
    row.edgeRssMiB = edgeRss / 1024 / 1024;
  }
  if (target === 'iop') {
    row.agentCpuMsPerRequest = (after.agent.cpuMs - before.agent.cpuMs) / results.length;
    row.agentRssMiB = agentRss / 1024 / 1024;
  }
  return row;
}

/** Runs one agent takes in the idle-streams stack (agents cap `--max-concurrency` at 1 024). */
const IDLE_RUNS_PER_AGENT = 1000;

/**
 * `IDLE_STREAMS` streams held open at once on a sim that answers after 10 minutes, over one agent per 1 000 streams.
 */
async function idleStreams(): Promise<IdleStreamsResult> {
  // one spare: P2C need not fill every agent to the last slot
  const agents = Math.ceil(IDLE_STREAMS / IDLE_RUNS_PER_AGENT) + 1;
  const stack = await startStack(
    { name: 'paced', args: ['--ttft-ms', '600000', '--itl-ms', '5'], requests: {} },
    { agents, agentMaxConcurrency: IDLE_RUNS_PER_AGENT + 24 },
  );
  try {
    return await measureIdleStreams({
      edgeUrl: stack.edgeUrl,
      edgePid: stack.edge.pid,
      agentPid: stack.agent.pid,
      agents,
      apiKey: API_KEY,
      model: MODEL,
      streams: IDLE_STREAMS,
    });
  } finally {
    await stopStack(stack);
  }
}

async function main(): Promise<void> {
  console.log(
    `iop gateway benchmark — ${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}, scale ${scale}`,
  );
  if (pins !== undefined) pinProcess(process.pid, pins.load);
  console.log(
    pins === undefined
      ? `${OUTPUT_TOKENS} output tokens per request; load generator, sim, edge and agent share every CPU (not pinned: ${plan as string}).\n`
      : `${OUTPUT_TOKENS} output tokens per request; edge, agent and edge-alone on CPU ${pins.gateway}, load generator and sim on CPU ${pins.load}.\n`,
  );
  const rows: Row[] = [];
  for (const sim of SIMS) {
    if (simNames !== undefined && !simNames.includes(sim.name)) continue;
    const stack = await startStack(sim, { edgeAlone: TARGETS.includes('edge'), pins });
    try {
      process.stderr.write(`  ${sim.name}: ${WARMUP} + ${WARMUP} requests per target to steady state\n`);
      await warmToSteadyState(stack);
      for (const stream of [false, true]) {
        for (const concurrency of CONCURRENCY) {
          for (const target of TARGETS) {
            const row = await measure(stack, sim, stream, concurrency, target);
            rows.push(row);
            process.stderr.write(
              `  ${sim.name} ${row.mode} c=${concurrency} ${target}: ${fixed(row.rps, 0)} req/s, p50 ${fixed(row.latencyP50)} ms, errors ${row.errors}\n`,
            );
          }
        }
      }
    } finally {
      await stopStack(stack);
    }
  }
  const idle = IDLE_STREAMS > 0 ? await idleStreams() : undefined;
  console.log('');
  printTable(rows);
  printOverhead(rows);
  if (idle !== undefined) {
    console.log(
      `\nIdle streams: ${idle.inFlight} of ${idle.streams} streams in flight at once (opened in ${(idle.openMs / 1000).toFixed(1)} s), waiting for a first token;`,
    );
    console.log(
      `edge RSS ${fixed(idle.edgeRssBeforeMiB, 0)} → ${fixed(idle.edgeRssAfterMiB, 0)} MiB: ${fixed(idle.edgeKiBPerStream, 1)} KiB per stream; an agent: ${fixed(idle.agentKiBPerRun, 1)} KiB per run it holds.`,
    );
  }
  if (process.env.BENCH_JSON !== undefined) console.log(JSON.stringify({ rows, idle }));
}

(process.argv[2] === 'lone' ? loneMain() : main()).catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
