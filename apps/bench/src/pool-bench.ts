#!/usr/bin/env node
/**
 * `npm run bench:pool`: a pool of 3 sims, each behind its own agent, behind one edge, on loopback.
 * 1. Distribution: how the current routing spreads a closed-loop streaming load over the agents.
 * 2. Failover: the same load for a fixed time; one agent is killed (SIGKILL) halfway; p99 latency
 *    and errors of the requests that completed before and after the kill.
 * 3. Prefix affinity: conversations with shared prefixes; the share of follow-ups that reach the
 *    agent that served the conversation first, and the edge's warm/cold counters.
 * 4. Claude Code's billing line: multi-turn Anthropic Messages conversations whose system prompt
 *    opens with a per-request billing line (billing-line-phase.ts), on sims with the
 *    `gpu-h100-8b` profile (time-scale 0.1); one fresh pool per edge `billingHeader` setting
 *    (keep, end, drop); the sims' prefix-cache hit rate of each, side by side.
 * The edge logs at info (its `edge listening` line tells the port), which costs a little CPU.
 * `BENCH_SCALE=0.5` halves the requests and the failover duration.
 * `npm run bench:pool -- sessions` runs the multi-turn routing comparison instead (pool-sessions-bench.ts).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { billingLinePhase, type BillingPhaseResult } from './billing-line-phase.js';
import { launch, launchAgent, type Proc } from './processes.js';
import { buildReport } from './bench-report.js';
import { Agent } from 'undici';
import { sendRequest, type RequestResult } from './request.js';
import { summarize } from './stats.js';
import { runWorkload, type WorkloadOptions } from './workload.js';

const API_KEY = 'sk-iop-pool-bench-0001';
const MODEL = 'pool-model';
const JOIN_TOKEN = 'iop-pool-bench-join-token';
const AGENTS = 3;
const CONCURRENCY = 12;
const scale = Number(process.env.BENCH_SCALE ?? '1');

const FAST_SIM = ['--ttft-ms', '40', '--itl-ms', '5', '--output-tokens', '32'];

interface Pool {
  edge: Proc;
  origin: string;
  agents: Proc[];
  simOrigins: string[];
  all: Proc[];
}

/** Edge config file (`--config`) and sim timing flags; the default is the fast sim and the default config. */
async function startPool(options: { simArgs?: string[]; edgeConfig?: Record<string, unknown> } = {}): Promise<Pool> {
  const all: Proc[] = [];
  const configArgs: string[] = [];
  if (options.edgeConfig !== undefined) {
    const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'iop-pool-bench-')), 'edge.json');
    writeFileSync(file, JSON.stringify(options.edgeConfig));
    configArgs.push('--config', file);
  }
  const edge = launch(
    'edge',
    'apps/edge/dist/main.js',
    ['--port', '0', '--tunnel-port', '0', '--api-keys', API_KEY, '--join-tokens', JOIN_TOKEN, ...configArgs],
    { IOP_LOG_LEVEL: 'info', IOP_DATA_DIR: os.tmpdir() },
  );
  all.push(edge);
  const listening = await edge.ready();
  const agents: Proc[] = [];
  const simOrigins: string[] = [];
  for (let index = 1; index <= AGENTS; index++) {
    const sim = launch(`sim-${index}`, 'apps/sim/dist/main.js', [
      '--port',
      '0',
      '--host',
      '127.0.0.1',
      '--models',
      'pool-model',
      ...(options.simArgs ?? FAST_SIM),
    ]);
    all.push(sim);
    const simPort = (await sim.ready()).port as number;
    simOrigins.push(`http://127.0.0.1:${simPort}`);
    const agent = launchAgent(`agent-${index}`, {
      tunnelPort: listening.tunnelPort as number,
      joinToken: JOIN_TOKEN,
      agentId: `agent-${index}`,
      backendUrl: `http://127.0.0.1:${simPort}`,
      models: 'pool-model',
      maxConcurrency: 8,
    });
    all.push(agent);
    await agent.ready(30_000);
    agents.push(agent);
  }
  return { edge, origin: `http://127.0.0.1:${listening.port as number}`, agents, simOrigins, all };
}

function workload(origin: string, extra: Partial<WorkloadOptions>): WorkloadOptions {
  return {
    origin,
    spec: { dialect: 'chat', model: 'pool-model', stream: true, apiKey: API_KEY },
    promptWords: { min: 50, max: 200 },
    maxTokens: { min: 32, max: 32 },
    mode: { kind: 'closed', concurrency: CONCURRENCY },
    requests: Math.round(600 * scale),
    ...extra,
  };
}

function phase(results: readonly RequestResult[]): string {
  const latency = summarize(results.map((result) => result.latencyMs));
  const errors = results.filter((result) => !result.ok).length;
  return `${results.length} requests, p50 ${latency.p50.toFixed(1)} ms, p99 ${latency.p99.toFixed(1)} ms, errors ${errors}`;
}

const CONVERSATIONS = 24;

/**
 * Prefix affinity: requests of 24 conversations, each with its own long system prompt and first
 * user turn, and a different last turn per request. Reports the share of requests that reached
 * the agent that served their conversation first (measured here from `x-iop-agent-id`), and the
 * edge's own warm/cold counters (`iop_prefix_affinity_hits_total`).
 */
async function affinityPhase(origin: string): Promise<string> {
  const dispatcher = new Agent({ connections: 64 });
  const firstAgent = new Map<number, string>();
  let warm = 0;
  let total = 0;
  let next = 0;
  const requests = Math.round(300 * scale);
  const worker = async () => {
    for (let index = next++; index < requests; index = next++) {
      const conversation = index % CONVERSATIONS;
      const body = {
        model: MODEL,
        stream: true,
        max_tokens: 16,
        messages: [
          {
            role: 'system',
            content: `You are assistant number ${conversation}. ${'Follow the house rules. '.repeat(40)}`,
          },
          { role: 'user', content: `Conversation ${conversation}: let us plan a trip.` },
          { role: 'assistant', content: 'Sure.' },
          { role: 'user', content: `Question ${index}` },
        ],
      };
      const result = await sendRequest(dispatcher, origin, {
        dialect: 'chat',
        model: MODEL,
        prompt: '',
        maxTokens: 16,
        stream: true,
        apiKey: API_KEY,
        body,
      });
      if (!result.ok || result.agent === undefined) continue;
      const first = firstAgent.get(conversation);
      if (first === undefined) firstAgent.set(conversation, result.agent);
      else {
        total++;
        if (first === result.agent) warm++;
      }
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  await dispatcher.close();
  const metrics = await (await fetch(`${origin}/metrics`)).text();
  const counter = (result: string) =>
    metrics
      .split('\n')
      .filter((line) => line.startsWith('iop_prefix_affinity_hits_total{') && line.includes(`result="${result}"`))
      .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
  const spread = new Set(firstAgent.values()).size;
  return `${((warm / Math.max(1, total)) * 100).toFixed(1)}% of follow-up requests reached their conversation's first agent (${warm}/${total}); edge counters warm ${counter('warm')}, cold ${counter('cold')}; ${CONVERSATIONS} conversations spread over ${spread} agents`;
}

async function main(): Promise<void> {
  console.log(
    `machine: ${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}`,
  );
  console.log(
    `pool: 1 edge, ${AGENTS} agents (max concurrency 8) each on its own sim (TTFT 40 ms, ITL 5 ms, 32 tokens); closed loop, concurrency ${CONCURRENCY}, streaming chat\n`,
  );
  let pool = await startPool();
  try {
    const distribution = buildReport(
      ...(Object.values(await runWorkload(workload(pool.origin, {}))) as [RequestResult[], number]),
    );
    console.log('1. distribution across agents');
    for (const [agent, count] of Object.entries(distribution.agents).sort())
      console.log(`   ${agent}: ${count} (${((count / distribution.requests.total) * 100).toFixed(1)}%)`);
    console.log(
      `   ${distribution.requests.total} requests, ${distribution.requestsPerSecond} req/s, TTFT p50 ${distribution.ttftMs.p50} ms p99 ${distribution.ttftMs.p99} ms, latency p99 ${distribution.latencyMs.p99} ms, errors ${distribution.requests.failed}`,
    );
    console.log(`   prefix affinity: ${await affinityPhase(pool.origin)}\n`);
    await Promise.all(pool.all.map((proc) => proc.kill()));

    pool = await startPool();
    const durationMs = Math.round(10_000 * scale);
    const completions: Array<{ at: number; result: RequestResult }> = [];
    let killedAt = Number.POSITIVE_INFINITY;
    const victim = pool.agents[AGENTS - 1]!;
    const kill = setTimeout(() => {
      killedAt = performance.now();
      void victim.kill('SIGKILL');
    }, durationMs / 2);
    await runWorkload(
      workload(pool.origin, {
        requests: Number.POSITIVE_INFINITY,
        durationMs,
        onProgress: (_done, all) => completions.push({ at: performance.now(), result: all[all.length - 1]! }),
      }),
    );
    clearTimeout(kill);
    const before = completions.filter((entry) => entry.at < killedAt).map((entry) => entry.result);
    const after = completions.filter((entry) => entry.at >= killedAt).map((entry) => entry.result);
    const firstSecond = completions
      .filter((entry) => entry.at >= killedAt && entry.at < killedAt + 1000)
      .map((entry) => entry.result);
    console.log(
      `2. failover: agent-${AGENTS} killed (SIGKILL) at ${(durationMs / 2000).toFixed(1)} s of ${(durationMs / 1000).toFixed(1)} s`,
    );
    console.log(`   before: ${phase(before)}`);
    console.log(`   after:  ${phase(after)}`);
    console.log(`   first second after the kill: ${phase(firstSecond)}`);
    const classes = buildReport(after, 1).errors;
    console.log(
      `   errors after the kill by class: ${Object.keys(classes).length === 0 ? 'none' : JSON.stringify(classes)}`,
    );
    console.log(
      `   requests completed after the kill, by agent (ok only): ${JSON.stringify(
        buildReport(
          after.filter((result) => result.ok),
          1,
        ).agents,
      )}; served by the killed agent (any outcome): ${after.filter((result) => result.agent === `agent-${AGENTS}`).length}`,
    );
    await Promise.all(pool.all.map((proc) => proc.kill()));

    const conversations = Math.max(6, Math.round(24 * scale));
    const turns = 6;
    console.log(
      `\n4. Claude Code billing line: ${conversations} Anthropic Messages conversations × ${turns} turns, concurrency ${CONCURRENCY}, sims with --profile gpu-h100-8b --time-scale 0.1; system prompt = per-request billing line + ~1,100 shared words`,
    );
    const byPlacement: Array<[string, BillingPhaseResult]> = [];
    for (const billingHeader of ['keep', 'end', 'drop']) {
      pool = await startPool({
        simArgs: ['--profile', 'gpu-h100-8b', '--time-scale', '0.1'],
        edgeConfig: { billingHeader },
      });
      byPlacement.push([
        billingHeader,
        await billingLinePhase({
          origin: pool.origin,
          apiKey: API_KEY,
          model: MODEL,
          simOrigins: pool.simOrigins,
          conversations,
          turns,
          concurrency: CONCURRENCY,
        }),
      ]);
      await Promise.all(pool.all.map((proc) => proc.kill()));
    }
    console.log(`   ${'billingHeader'.padEnd(14)}${byPlacement.map(([name]) => name.padStart(18)).join('')}`);
    console.log(
      `   ${'hit rate'.padEnd(14)}${byPlacement.map(([, result]) => `${(result.hitRate * 100).toFixed(1)} %`.padStart(18)).join('')}`,
    );
    console.log(
      `   ${'hit tokens'.padEnd(14)}${byPlacement.map(([, result]) => `${result.hitsTokens}/${result.queriesTokens}`.padStart(18)).join('')}`,
    );
    console.log(
      `   ${'errors'.padEnd(14)}${byPlacement.map(([, result]) => `${result.errors}/${result.requests}`.padStart(18)).join('')}`,
    );
  } finally {
    await Promise.all(pool.all.map((proc) => proc.kill()));
  }
}

// `npm run bench:pool -- sessions`: the multi-turn routing comparison (pool-sessions-bench.ts) instead.
const run =
  process.argv[2] === 'sessions' ? () => import('./pool-sessions-bench.js').then((module) => module.main()) : main;
run().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
