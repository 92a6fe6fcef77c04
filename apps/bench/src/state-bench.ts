#!/usr/bin/env node
/**
 * `npm run bench:state`: what shared state costs per request. The same load (instant sim,
 * non-stream Chat Completions, 20 output tokens) goes through one edge in three set-ups:
 * - `plain key`: a plain `apiKeys` key, no policy (no limits, only a ledger row);
 * - `embedded`: a key with limits (requests and tokens per minute, concurrent streams) from the
 *   default embedded storage (SQLite, in-memory counters);
 * - `pg+redis`: the same key kept in PostgreSQL, counters in Redis (`BENCH_PG_URL`,
 *   `BENCH_REDIS_URL`; that row is skipped without them).
 * Reports per row: req/s, p50 and p99 latency, and the edge's CPU per request (the edge logs at
 * info, as deployed). The benchmark uses
 * its own PostgreSQL schema and Redis key prefix and drops them afterwards.
 * `BENCH_SCALE=0.5` halves the requests.
 */
import os from 'node:os';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { Redis } from 'ioredis';
import { launch, launchAgent, procStats, type Proc } from './processes.js';
import { runWorkload } from './workload.js';
import { summarize } from './stats.js';

const PLAIN_KEY = 'sk-iop-state-bench-plain-0001';
const ADMIN_KEY = 'iop-state-bench-admin-key-0001';
const JOIN_TOKEN = 'iop-state-bench-join-token';
const scale = Number(process.env.BENCH_SCALE ?? '1');
const PG_URL = process.env.BENCH_PG_URL ?? '';
const REDIS_URL = process.env.BENCH_REDIS_URL ?? '';
const POLICY = {
  name: 'bench',
  limits: { requestsPerMinute: 1_000_000, tokensPerMinute: 1_000_000_000, maxConcurrentStreams: 1000 },
};

interface Stack {
  edge: Proc;
  all: Proc[];
  origin: string;
}

async function startStack(env: NodeJS.ProcessEnv): Promise<Stack> {
  const all: Proc[] = [];
  const sim = launch('sim', 'apps/sim/dist/main.js', [
    '--port',
    '0',
    '--host',
    '127.0.0.1',
    '--models',
    'bench-model',
    '--output-tokens',
    '20',
    '--ttft-ms',
    '0',
    '--itl-ms',
    '0',
  ]);
  all.push(sim);
  const simPort = (await sim.ready()).port as number;
  const dataDir = `${os.tmpdir()}/iop-state-bench-${process.pid}-${randomBytes(3).toString('hex')}`;
  const edge = launch(
    'edge',
    'apps/edge/dist/main.js',
    [
      '--port',
      '0',
      '--tunnel-port',
      '0',
      '--api-keys',
      PLAIN_KEY,
      '--join-tokens',
      JOIN_TOKEN,
      '--admin-keys',
      ADMIN_KEY,
    ],
    { IOP_LOG_LEVEL: 'info', IOP_DATA_DIR: dataDir, ...env },
  );
  all.push(edge);
  const listening = await edge.ready(30_000).catch(() => undefined);
  if (listening === undefined) throw new Error('edge did not start');
  const agent = launchAgent('agent', {
    tunnelPort: listening.tunnelPort as number,
    joinToken: JOIN_TOKEN,
    agentId: 'bench-agent',
    backendUrl: `http://127.0.0.1:${simPort}`,
    models: 'bench-model',
    maxConcurrency: 256,
    logLevel: 'warn',
  });
  all.push(agent);
  await agent.ready(30_000);
  return { edge, all, origin: `http://127.0.0.1:${listening.port as number}` };
}

async function createKey(origin: string): Promise<string> {
  const response = await fetch(`${origin}/admin/keys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify(POLICY),
  });
  if (response.status !== 201)
    throw new Error(`creating the bench key failed: ${response.status} ${await response.text()}`);
  return ((await response.json()) as { key: string }).key;
}

async function measure(label: string, stack: Stack, apiKey: string, concurrency: number): Promise<string> {
  const spec = { dialect: 'chat' as const, model: 'bench-model', stream: false, apiKey };
  const base = {
    origin: stack.origin,
    spec,
    promptWords: { min: 8, max: 32 },
    maxTokens: { min: 20, max: 20 },
    mode: { kind: 'closed' as const, concurrency },
  };
  await runWorkload({ ...base, requests: Math.max(300, concurrency * 4) });
  const before = procStats(stack.edge.child.pid!);
  const { results, wallMs } = await runWorkload({
    ...base,
    requests: Math.round((concurrency === 1 ? 1000 : 3000) * scale),
  });
  const after = procStats(stack.edge.child.pid!);
  const latency = summarize(results.filter((result) => result.ok).map((result) => result.latencyMs));
  const errors = results.filter((result) => !result.ok).length;
  const cpu = (after.cpuMs - before.cpuMs) / results.length;
  return `| ${label} | ${concurrency} | ${(results.length / (wallMs / 1000)).toFixed(0)} | ${latency.p50.toFixed(2)} | ${latency.p99.toFixed(2)} | ${cpu.toFixed(3)} | ${errors} |`;
}

async function main(): Promise<void> {
  console.log(
    `iop shared-state benchmark — ${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, Node ${process.version}, scale ${scale}`,
  );
  const rows = [
    '| storage | conc | req/s | p50 ms | p99 ms | edge CPU ms/req | errors |',
    '|---|---|---|---|---|---|---|',
  ];
  const embedded = await startStack({});
  try {
    const key = await createKey(embedded.origin);
    for (const concurrency of [1, 16]) {
      rows.push(await measure('plain key', embedded, PLAIN_KEY, concurrency));
      rows.push(await measure('embedded (SQLite + memory)', embedded, key, concurrency));
    }
  } finally {
    await Promise.all(embedded.all.map((proc) => proc.kill()));
  }
  if (PG_URL === '' || REDIS_URL === '') {
    console.log('pg+redis rows skipped: set BENCH_PG_URL and BENCH_REDIS_URL');
  } else {
    const suffix = `${process.pid}_${randomBytes(3).toString('hex')}`;
    const schema = `iop_bench_${suffix}`;
    const prefix = `iop-bench:${suffix}:`;
    const shared = await startStack({
      IOP_STORAGE_POSTGRES_URL: PG_URL,
      IOP_STORAGE_POSTGRES_SCHEMA: schema,
      IOP_STORAGE_REDIS_URL: REDIS_URL,
      IOP_STORAGE_REDIS_PREFIX: prefix,
    });
    try {
      const key = await createKey(shared.origin);
      for (const concurrency of [1, 16]) rows.push(await measure('PostgreSQL + Redis', shared, key, concurrency));
    } finally {
      await Promise.all(shared.all.map((proc) => proc.kill()));
      const client = new pg.Client({ connectionString: PG_URL });
      await client.connect();
      await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await client.end();
      const redis = new Redis(REDIS_URL);
      const keys = await redis.keys(`${prefix}*`);
      if (keys.length > 0) await redis.del(...keys);
      redis.disconnect();
    }
  }
  console.log(rows.join('\n'));
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
