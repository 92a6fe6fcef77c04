/**
 * `npm run bench -- lone`: what a lone request pays for the gateway. One request at a time, back to back, over one
 * keep-alive connection per target (undici `Client.request`), to an instant sim (no delays): the non-stream answer's
 * total time and a stream's time to its first token (the first content delta), direct to the sim and through the
 * gateway, in one run. Targets take turns in blocks of 50 requests (runLoneRounds), so a machine whose speed drifts
 * moves every column alike; added = target minus direct, at each percentile.
 *
 * The gateway's processes run on a core of their own, the client (this process) and the sim on the other
 * (cpu-pinning.ts; `BENCH_PIN=0` shares every CPU). `BENCH_LONE_WARMUP` requests of each mode to each target
 * (default 5 000) come before `BENCH_LONE_REQUESTS` counted ones (default 500); `BENCH_TARGETS` picks among
 * `direct`, `iop` (edge → tunnel → agent → sim) and `edge` (an edge alone, the sim as its direct provider).
 * `BENCH_LONE_BASELINE=<dir>` adds `iop-base`: the edge and agent of another built copy of the repository (e.g. the
 * commit before a change), measured in the same rounds. Times in ms.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'undici';
import { SseReader } from '@iop/core';
import { cpuPlan, pinProcess, type CpuPlan } from './cpu-pinning.js';
import { DIALECTS } from './dialects.js';
import { launch, launchAgent, repoRoot, type LaunchOptions, type Proc } from './processes.js';
import { summarize, type Summary } from './stats.js';

const API_KEY = 'sk-iop-bench-lone-0001';
const JOIN_TOKEN = 'iop-bench-lone-join-token';
const MODEL = 'bench-model';
const OUTPUT_TOKENS = 20;
const PROMPT = 'the a little cat dog sun ran jumped over happy tree house bird sky play friend';

/** A target of the lone-request rounds: where requests go, and the gateway processes behind it. */
export interface LoneTarget {
  name: string;
  origin: string;
  client: Client;
}

/** One target's figures: non-stream total and stream TTFT, ms. */
export interface LoneResult {
  target: string;
  total: Summary;
  ttft: Summary;
  errors: number;
}

const chat = DIALECTS.chat;
const HEADERS = {
  'content-type': 'application/json',
  authorization: `Bearer ${API_KEY}`,
};
const BODIES = {
  nonStream: JSON.stringify(chat.body(MODEL, PROMPT, OUTPUT_TOKENS, false)),
  stream: JSON.stringify(chat.body(MODEL, PROMPT, OUTPUT_TOKENS, true)),
};

/**
 * One non-stream request: its total time (until the whole body is read), ms, or undefined when it failed.
 */
async function nonStream(client: Client): Promise<number | undefined> {
  const started = performance.now();
  const response = await client.request({
    path: chat.path,
    method: 'POST',
    headers: HEADERS,
    body: BODIES.nonStream,
  });
  const text = await response.body.text();
  const elapsed = performance.now() - started;
  return response.statusCode === 200 && text.includes('"choices"') ? elapsed : undefined;
}

/** One streamed request: time to its first content delta, ms, or undefined when it failed. */
async function stream(client: Client): Promise<number | undefined> {
  const started = performance.now();
  const response = await client.request({ path: chat.path, method: 'POST', headers: HEADERS, body: BODIES.stream });
  let ttft: number | undefined;
  let failed = response.statusCode !== 200;
  const reader = new SseReader((event) => {
    if (ttft !== undefined || event.data === '[DONE]') return;
    try {
      if (chat.isToken(event.event, JSON.parse(event.data) as Record<string, unknown>))
        ttft = performance.now() - started;
    } catch {
      failed = true;
    }
  });
  for await (const chunk of response.body) if (ttft === undefined) reader.pushBytes(chunk as Uint8Array);
  return failed ? undefined : ttft;
}

/** Requests in a row to one target before the next target's turn; the first of each is not counted. */
const BLOCK = 50;

/**
 * Sends `warmup` then `requests` counted requests of each mode to every target, one at a time, each as soon as the
 * previous one ended: in blocks of `BLOCK` to one target (non-stream to every target in turn, then streamed), whose
 * first request is not counted (the previous target's processes may still be busy with their last answer; within a
 * block, a target's own work after an answer is its own).
 */
export async function runLoneRounds(
  targets: readonly LoneTarget[],
  warmup: number,
  requests: number,
  onProgress?: (done: number) => void,
): Promise<LoneResult[]> {
  const totals = targets.map(() => [] as number[]);
  const ttfts = targets.map(() => [] as number[]);
  const errors = targets.map(() => 0);
  const perBlock = BLOCK - 1;
  const blocks = Math.ceil(warmup / perBlock) + Math.ceil(requests / perBlock);
  const warmBlocks = Math.ceil(warmup / perBlock);
  for (let block = 0; block < blocks; block++) {
    for (const [mode, samples] of [
      [nonStream, totals],
      [stream, ttfts],
    ] as const) {
      for (let i = 0; i < targets.length; i++) {
        const client = targets[i]!.client;
        for (let n = 0; n < BLOCK; n++) {
          const elapsed = await mode(client).catch(() => undefined);
          if (elapsed === undefined) errors[i]!++;
          else if (n > 0 && block >= warmBlocks && samples[i]!.length < requests) samples[i]!.push(elapsed);
        }
      }
    }
    onProgress?.((block + 1) * perBlock);
  }
  return targets.map((target, i) => ({
    target: target.name,
    total: summarize(totals[i]!),
    ttft: summarize(ttfts[i]!),
    errors: errors[i]!,
  }));
}

const ms = (value: number) => (Number.isNaN(value) ? '-' : value.toFixed(3));
const added = (value: number) => (Number.isNaN(value) ? '-' : `${value >= 0 ? '+' : ''}${value.toFixed(3)}`);

/** The results as a Markdown table: p50/p90/p99 of each target, and what each adds over `direct` (first row). */
export function formatLone(results: readonly LoneResult[]): string {
  const direct = results.find((result) => result.target === 'direct');
  const lines = [
    '| target | non-stream p50 | p90 | p99 | added p50 | added p90 | TTFT p50 | p90 | p99 | added p50 | added p90 | errors |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const result of results) {
    const { total, ttft } = result;
    const plus = (mine: number, theirs: number | undefined) =>
      direct === undefined || result === direct ? '' : added(mine - theirs!);
    lines.push(
      `| ${result.target} | ${ms(total.p50)} | ${ms(total.p90)} | ${ms(total.p99)} | ${plus(total.p50, direct?.total.p50)} | ${plus(total.p90, direct?.total.p90)} | ${ms(ttft.p50)} | ${ms(ttft.p90)} | ${ms(ttft.p99)} | ${plus(ttft.p50, direct?.ttft.p50)} | ${plus(ttft.p90, direct?.ttft.p90)} | ${result.errors} |`,
    );
  }
  return lines.join('\n');
}

/** Starts an edge from the repository copy at `root`; resolves with it and its ports once ready. */
async function startEdge(
  root: string,
  name: string,
  args: string[],
  options: LaunchOptions,
): Promise<{ proc: Proc; port: number; tunnelPort: number }> {
  const proc = launch(
    name,
    path.join(root, 'apps/edge/dist/main.js'),
    ['--port', '0', '--tunnel-port', '0', '--api-keys', API_KEY, '--join-tokens', JOIN_TOKEN, ...args],
    { IOP_LOG_LEVEL: 'info', IOP_DATA_DIR: mkdtempSync(path.join(os.tmpdir(), `iop-lone-${name}-`)) },
    options,
  );
  const ready = await proc.ready();
  return { proc, port: ready.port as number, tunnelPort: ready.tunnelPort as number };
}

/** Starts an edge and an agent in front of `simUrl` from the repository copy at `root`; returns the edge's origin. */
async function startIop(root: string, name: string, simUrl: string, gateway: LaunchOptions, procs: Proc[]) {
  const edge = await startEdge(root, `${name}-edge`, [], gateway);
  procs.push(edge.proc);
  const agent = launchAgent(
    `${name}-agent`,
    {
      tunnelPort: edge.tunnelPort,
      joinToken: JOIN_TOKEN,
      agentId: `${name}-agent`,
      backendUrl: simUrl,
      models: MODEL,
      maxConcurrency: 64,
      script: path.join(root, 'apps/agent/dist/main.js'),
    },
    gateway,
  );
  procs.push(agent);
  await agent.ready(30_000);
  return `http://127.0.0.1:${edge.port}`;
}

/** The `lone` mode of `npm run bench` (see the header): starts its processes, runs the rounds, prints the table. */
export async function loneMain(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const warmup = Number(env.BENCH_LONE_WARMUP ?? '5000');
  const requests = Number(env.BENCH_LONE_REQUESTS ?? '500');
  const names = env.BENCH_TARGETS?.split(',') ?? ['direct', 'iop', 'edge'];
  const baseline = env.BENCH_LONE_BASELINE;
  const plan = cpuPlan(env);
  const pins: CpuPlan | undefined = typeof plan === 'string' ? undefined : plan;
  console.log(
    `iop lone-request benchmark — ${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, Node ${process.version}, load average ${os
      .loadavg()
      .map((load) => load.toFixed(2))
      .join(' ')}`,
  );
  console.log(
    pins === undefined
      ? `not pinned (${plan as string}); `
      : `gateway processes on CPU ${pins.gateway}, client and sim on CPU ${pins.load}; ` +
          `${warmup} warm-up requests, ${requests} measured, per target and mode; ${OUTPUT_TOKENS} output tokens, instant sim`,
  );
  if (pins !== undefined) pinProcess(process.pid, pins.load);
  const gateway: LaunchOptions = {
    execArgv: env.BENCH_GATEWAY_NODE_ARGS?.split(' ').filter(Boolean) ?? [],
    cpus: pins?.gateway,
  };
  const root = repoRoot();
  const procs: Proc[] = [];
  const sim = launch(
    'sim',
    path.join(root, 'apps/sim/dist/main.js'),
    ['--port', '0', '--host', '127.0.0.1', '--models', MODEL, '--output-tokens', String(OUTPUT_TOKENS)],
    {},
    { cpus: pins?.load },
  );
  const simUrl = `http://127.0.0.1:${(await sim.ready()).port as number}`;
  const targets: LoneTarget[] = [];
  const add = (name: string, origin: string) =>
    targets.push({ name, origin, client: new Client(origin, { pipelining: 1, keepAliveTimeout: 60_000 }) });
  try {
    if (names.includes('direct')) add('direct', simUrl);
    if (names.includes('iop')) add('iop', await startIop(root, 'iop', simUrl, gateway, procs));
    if (baseline !== undefined) add('iop-base', await startIop(path.resolve(baseline), 'base', simUrl, gateway, procs));
    if (names.includes('edge')) {
      const config = path.join(mkdtempSync(path.join(os.tmpdir(), 'iop-lone-direct-')), 'edge.json');
      writeFileSync(
        config,
        JSON.stringify({
          pool: { directProviders: [{ id: 'sim', baseUrl: simUrl, models: [MODEL], maxConcurrency: 64 }] },
        }),
      );
      const edge = await startEdge(root, 'edge-alone', ['--config', config], gateway);
      procs.push(edge.proc);
      add('edge', `http://127.0.0.1:${edge.port}`);
    }
    for (const proc of [sim, ...procs]) proc.detach();
    const results = await runLoneRounds(targets, warmup, requests, (done) => {
      if (done % 980 === 0) process.stderr.write(`  ${done} requests of each mode to each target\n`);
    });
    console.log(`\n${formatLone(results)}`);
    console.log(
      `load average after: ${os
        .loadavg()
        .map((load) => load.toFixed(2))
        .join(' ')}`,
    );
    if (env.BENCH_JSON !== undefined) console.log(JSON.stringify(results));
  } finally {
    await Promise.all(targets.map((target) => target.client.close()));
    await Promise.all(procs.map((proc) => proc.kill('SIGTERM')));
    await sim.kill('SIGTERM');
  }
}
