#!/usr/bin/env node
/**
 * `npm run bench:pool -- sessions`: routing policies side by side on a pool of GPU-profile sims,
 * under a coding-agent workload (session-workload.ts): for each policy a fresh pool (an edge,
 * `BENCH_AGENTS` agents, each in front of its own sim with `BENCH_PROFILE` at `BENCH_TIME_SCALE`),
 * the same sessions, then the table of session-report.ts with the ideal hit rate beside, the raw
 * samples (`samples.json`) and the TTFT CDF (`ttft-cdf.svg`) in `BENCH_OUT` (default
 * `bench-results/sessions-<time>`). Policies (`BENCH_POLICIES`, comma-separated):
 * - `round-robin`: `pool.balancer: "round-robin"`, affinity off;
 * - `p2c`: power of two choices on live load, affinity off;
 * - `affinity`: prefix affinity with bounded load (the default);
 * - `kv-events`: cache-aware routing (decision 007): the sims publish KV events, the agents
 *   follow them and report residency, the edge routes by it (prefix affinity as the fallback).
 * The measured prefix-cache hit rate is the sims' own counters (`vllm:prefix_cache_*` in tokens,
 * read from `GET /_sim/stats` before and after). Progress (elapsed and remaining) goes to stderr
 * every few seconds, also when it is not a terminal.
 *
 * The kv-events edge is told its GPUs' prefill rate (`pool.affinity.prefillTokensPerS`): the
 * profile's (`BENCH_PREFILL_TOKENS_PER_S` overrides it) divided by the time scale, as an operator
 * configures it for the GPUs they run. The table's `GPU TTFT mean` is the sims' own
 * (`vllm:time_to_first_token_seconds`: the GPU model's queue and prefill, without the path's or the
 * host's delays), so a gap between it and the measured mean is the host's CPU, not the routing.
 *
 * Workload knobs (environment): BENCH_WORKLOAD (`projects`, the default: sessions share their
 * project's system prompt; `private`: every session its own system prompt, no prefix shared
 * between sessions), BENCH_SESSIONS (64), BENCH_PROJECTS (4), BENCH_TURNS (8),
 * BENCH_SYSTEM_TOKENS (8000:20000), BENCH_USER_TOKENS (200:800), BENCH_MAX_TOKENS (100:300),
 * BENCH_THINK_MS (2000:8000, simulated: multiplied by the time scale), BENCH_SEED (1),
 * BENCH_REPLAY (a JSONL file instead of the synthetic sessions), BENCH_MAX_CONCURRENCY (per agent, 32).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { resolveProfile } from '@iop/sim';
import { launch, launchAgent, repoRoot, type Proc } from './processes.js';
import { idealCache } from './sessions/ideal-cache.js';
import { runSessions } from './sessions/session-runner.js';
import { formatTable, summarize, ttftCdfSvg, writeSamples, type PolicyRun } from './sessions/session-report.js';
import { replaySessions, syntheticSessions, type Session } from './sessions/session-workload.js';

const API_KEY = 'sk-iop-sessions-bench-0001';
const JOIN_TOKEN = 'iop-sessions-bench-join-token';
const MODEL = 'sessions-model';

const env = (name: string, fallback: string) => process.env[name] ?? fallback;
const pair = (name: string, fallback: string): [number, number] => {
  const [min, max = min] = env(name, fallback).split(':').map(Number);
  if (!Number.isFinite(min) || !Number.isFinite(max) || min! < 0 || max! < min!)
    throw new Error(`${name}: expected min:max, got ${env(name, fallback)}`);
  return [min!, max!];
};

const POLICIES: Record<string, { pool: Record<string, unknown> }> = {
  'round-robin': { pool: { balancer: 'round-robin', affinity: { enabled: false } } },
  p2c: { pool: { affinity: { enabled: false } } },
  affinity: { pool: {} },
  'kv-events': { pool: {} },
};

/** Policies whose sims publish KV events and whose agents follow them. */
const KV_EVENT_POLICIES = new Set(['kv-events']);
const KV_SIM_ARGS = ['--kv-events-endpoint', 'tcp://127.0.0.1:*', '--kv-events-replay-endpoint', 'tcp://127.0.0.1:*'];

interface Pool {
  origin: string;
  simOrigins: string[];
  all: Proc[];
}

async function startPool(
  config: Record<string, unknown>,
  agents: number,
  simArgs: string[],
  maxConcurrency: number,
  kvEvents: boolean,
): Promise<Pool> {
  const dir = path.join(os.tmpdir(), `iop-sessions-bench-${process.pid}-${Date.now()}`);
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, 'edge.json');
  writeFileSync(file, JSON.stringify(config));
  const all: Proc[] = [];
  const edge = launch(
    'edge',
    'apps/edge/dist/main.js',
    ['--port', '0', '--tunnel-port', '0', '--api-keys', API_KEY, '--join-tokens', JOIN_TOKEN, '--config', file],
    {
      IOP_LOG_LEVEL: 'warn',
      IOP_DATA_DIR: dir,
    },
  );
  all.push(edge);
  const listening = await edge.ready();
  const simOrigins: string[] = [];
  for (let index = 1; index <= agents; index++) {
    const sim = launch(`sim-${index}`, 'apps/sim/dist/main.js', [
      '--port',
      '0',
      '--models',
      MODEL,
      ...simArgs,
      ...(kvEvents ? KV_SIM_ARGS : []),
    ]);
    all.push(sim);
    const ready = await sim.ready();
    const port = ready.port as number;
    simOrigins.push(`http://127.0.0.1:${port}`);
    const agent = launchAgent(`agent-${index}`, {
      tunnelPort: listening.tunnelPort as number,
      joinToken: JOIN_TOKEN,
      agentId: `agent-${index}`,
      backendUrl: `http://127.0.0.1:${port}`,
      models: MODEL,
      maxConcurrency,
      logLevel: 'warn',
      ...(kvEvents
        ? {
            args: [
              '--kv-events-endpoint',
              String(ready.kvEventsEndpoint),
              '--kv-events-replay-endpoint',
              String(ready.kvEventsReplayEndpoint),
            ],
          }
        : {}),
    });
    all.push(agent);
    await agent.ready(60_000);
  }
  return { origin: `http://127.0.0.1:${listening.port as number}`, simOrigins, all };
}

interface SimCounters {
  queriedTokens: number;
  hitTokens: number;
  /** vLLM's `time_to_first_token_seconds` sum (ms) and count over the sims. */
  ttftSumMs: number;
  ttftCount: number;
}

/** A counter's value summed over its series in a Prometheus text exposition. */
function metricSum(text: string, name: string): number {
  let total = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const rest = line.slice(name.length);
    if (rest[0] !== ' ' && rest[0] !== '{') continue;
    total += Number(rest.slice(rest.lastIndexOf(' ') + 1)) || 0;
  }
  return total;
}

async function cacheCounters(simOrigins: readonly string[]): Promise<SimCounters> {
  let queriedTokens = 0;
  let hitTokens = 0;
  let ttftSumMs = 0;
  let ttftCount = 0;
  for (const origin of simOrigins) {
    const stats = (await (await fetch(`${origin}/_sim/stats`)).json()) as {
      gpu: { prefixCacheQueries: number; prefixCacheHits: number } | null;
    };
    queriedTokens += stats.gpu?.prefixCacheQueries ?? 0;
    hitTokens += stats.gpu?.prefixCacheHits ?? 0;
    const metrics = await (await fetch(`${origin}/metrics`)).text();
    ttftSumMs += metricSum(metrics, 'vllm:time_to_first_token_seconds_sum') * 1000;
    ttftCount += metricSum(metrics, 'vllm:time_to_first_token_seconds_count');
  }
  return { queriedTokens, hitTokens, ttftSumMs, ttftCount };
}

function workload(timeScale: number): { sessions: Session[]; label: string } {
  const replay = process.env.BENCH_REPLAY;
  if (replay !== undefined) return { sessions: replaySessions(replay, 256), label: `replay of ${replay}` };
  const think = pair('BENCH_THINK_MS', '2000:8000');
  const kind = env('BENCH_WORKLOAD', 'projects');
  if (kind !== 'projects' && kind !== 'private')
    throw new Error(`BENCH_WORKLOAD: expected projects or private, got ${kind}`);
  const sessions = Number(env('BENCH_SESSIONS', '64'));
  const options = {
    sessions,
    // `private`: one project per session, so no two sessions share a prefix.
    projects: kind === 'private' ? sessions : Number(env('BENCH_PROJECTS', '4')),
    turns: Number(env('BENCH_TURNS', '8')),
    systemTokens: pair('BENCH_SYSTEM_TOKENS', '8000:20000'),
    userTokens: pair('BENCH_USER_TOKENS', '200:800'),
    maxTokens: pair('BENCH_MAX_TOKENS', '100:300'),
    thinkMs: [Math.round(think[0] * timeScale), Math.round(think[1] * timeScale)] as [number, number],
    rampMs: Math.round(10_000 * timeScale),
    seed: Number(env('BENCH_SEED', '1')),
  };
  return {
    sessions: syntheticSessions(options),
    label: `${options.sessions} sessions × ${options.turns} turns in ${options.projects} projects${kind === 'private' ? ' (no shared prefix)' : ''}, system prompts ${options.systemTokens.join('–')} tokens, user turns ${options.userTokens.join('–')}, answers ${options.maxTokens.join('–')}, think ${think.join('–')} ms`,
  };
}

/** Elapsed and remaining, every 5 s, on stderr (a line each, so logs and pipes keep it). */
function progress(policy: string, total: number): { tick(): void; stop(): void } {
  const started = Date.now();
  let done = 0;
  const timer = setInterval(() => {
    const elapsed = (Date.now() - started) / 1000;
    const remaining = done === 0 ? '?' : `${Math.round((elapsed * (total - done)) / done)} s`;
    process.stderr.write(
      `[${policy}] ${done}/${total} requests, ${Math.round(elapsed)} s elapsed, ~${remaining} remaining\n`,
    );
  }, 5_000);
  return { tick: () => done++, stop: () => clearInterval(timer) };
}

export async function main(): Promise<void> {
  const agents = Number(env('BENCH_AGENTS', '4'));
  const profile = env('BENCH_PROFILE', 'gpu-h100-8b');
  const timeScale = Number(env('BENCH_TIME_SCALE', '0.25'));
  const maxConcurrency = Number(env('BENCH_MAX_CONCURRENCY', '32'));
  const policies = env('BENCH_POLICIES', Object.keys(POLICIES).join(',')).split(',');
  for (const policy of policies)
    if (POLICIES[policy] === undefined)
      throw new Error(`unknown policy ${policy} (known: ${Object.keys(POLICIES).join(', ')})`);
  const { sessions, label } = workload(timeScale);
  const total = sessions.reduce((sum, session) => sum + session.turns.length, 0);
  const out = env(
    'BENCH_OUT',
    path.join(repoRoot(), 'bench-results', `sessions-${new Date().toISOString().replace(/[:.]/g, '-')}`),
  );
  mkdirSync(out, { recursive: true });
  process.stderr.write(
    `${label}; ${agents} agents on ${profile} sims at time-scale ${timeScale}; policies ${policies.join(', ')}\n`,
  );
  const runs: PolicyRun[] = [];
  // The edge's clock is the wall clock: a sim at time-scale s prefills 1/s times faster than its profile.
  const prefillTokensPerS =
    Number(env('BENCH_PREFILL_TOKENS_PER_S', String(resolveProfile(profile).prefillTokensPerS))) / timeScale;
  for (const policy of policies) {
    const config = KV_EVENT_POLICIES.has(policy)
      ? { pool: { ...POLICIES[policy]!.pool, affinity: { prefillTokensPerS } } }
      : POLICIES[policy]!;
    const pool = await startPool(
      config,
      agents,
      ['--profile', profile, '--time-scale', String(timeScale)],
      maxConcurrency,
      KV_EVENT_POLICIES.has(policy),
    );
    try {
      const before = await cacheCounters(pool.simOrigins);
      const meter = progress(policy, total);
      const { samples, wallMs } = await runSessions({
        origin: pool.origin,
        apiKey: API_KEY,
        model: MODEL,
        sessions,
        onSample: () => meter.tick(),
      });
      meter.stop();
      const after = await cacheCounters(pool.simOrigins);
      runs.push({
        policy,
        samples,
        wallMs,
        ideal: idealCache(samples),
        measured: {
          queriedTokens: after.queriedTokens - before.queriedTokens,
          hitTokens: after.hitTokens - before.hitTokens,
        },
        gpuTtft: { sumMs: after.ttftSumMs - before.ttftSumMs, count: after.ttftCount - before.ttftCount },
      });
      // The edge's own figures (queue wait, TTFT as the edge saw it, residency picks) beside the samples.
      writeFileSync(path.join(out, `${policy}-edge-metrics.txt`), await (await fetch(`${pool.origin}/metrics`)).text());
    } finally {
      await Promise.all(pool.all.map((proc) => proc.kill()));
    }
  }
  const table = formatTable(runs.map(summarize));
  writeSamples(path.join(out, 'samples.json'), runs);
  writeFileSync(
    path.join(out, 'ttft-cdf.svg'),
    await ttftCdfSvg(runs, `TTFT per routing policy: ${agents} agents, ${profile}, ${sessions.length} sessions`),
  );
  process.stdout.write(
    `${label}; ${agents} agents on ${profile} sims (time-scale ${timeScale}; times below are wall-clock, so ×${1 / timeScale} for the profile's real time)\n\n${table}\n\nsamples: ${path.join(out, 'samples.json')}\npicture: ${path.join(out, 'ttft-cdf.svg')}\n`,
  );
}
