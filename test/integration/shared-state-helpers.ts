/**
 * Shared PostgreSQL and Redis for the multi-edge tests, selected by environment variables:
 * `IOP_TEST_PG_URL` (e.g. postgres://postgres@127.0.0.1:5432/test) and `IOP_TEST_REDIS_URL`
 * (e.g. redis://127.0.0.1:6379). Each test file gets its own PostgreSQL schema and Redis key
 * prefix (dropped afterwards), so parallel runs never collide. Without the variables the tests
 * are skipped with a printed reason.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { Redis } from 'ioredis';
import { JOIN_TOKEN, edgeReady, startAgent, startEdge, type EdgeHandle } from './harness';
import { sleep } from '@iop/core';

export const PG_URL = process.env.IOP_TEST_PG_URL ?? '';
export const REDIS_URL = process.env.IOP_TEST_REDIS_URL ?? '';
export const ADMIN_KEY = 'admin-key-test-000000001';

/** `describe` when both servers are configured, else a skipped `describe` and a printed reason. */
export function describeWithSharedState(
  name: string,
  body: () => void,
  needs: { pg?: boolean; redis?: boolean } = { pg: true, redis: true },
): void {
  const missing = [
    needs.pg && PG_URL === '' ? 'IOP_TEST_PG_URL' : undefined,
    needs.redis && REDIS_URL === '' ? 'IOP_TEST_REDIS_URL' : undefined,
  ].filter(Boolean);
  if (missing.length > 0) {
    console.log(`skipping "${name}": set ${missing.join(' and ')} to run it against real servers`);
    describe.skip(name, body);
  } else {
    describe(name, body);
  }
}

/** A fresh schema name and key prefix for one test file. */
export function isolation(tag: string): { schema: string; prefix: string } {
  const suffix = `${process.pid}_${randomBytes(4).toString('hex')}`;
  return { schema: `iop_test_${tag}_${suffix}`, prefix: `iop-test:${tag}:${suffix}:` };
}

export async function dropIsolation(
  isolated: { schema: string; prefix: string },
  pgUrl = PG_URL,
  redisUrl = REDIS_URL,
): Promise<void> {
  if (pgUrl !== '') {
    const client = new pg.Client({ connectionString: pgUrl });
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS ${isolated.schema} CASCADE`);
    await client.end();
  }
  if (redisUrl !== '') {
    const redis = new Redis(redisUrl);
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${isolated.prefix}*`, 'COUNT', 500);
      cursor = next;
      if (keys.length > 0) await redis.del(...keys);
    } while (cursor !== '0');
    redis.disconnect();
  }
}

export async function admin(
  edgeUrl: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${edgeUrl}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${ADMIN_KEY}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/**
 * Waits, when the current UTC minute has less than `needMs` left, until the next one starts (fixed one-minute limit
 * windows).
 */
export async function freshMinute(needMs = 20_000): Promise<void> {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < needMs) await sleep(left + 50);
}

/**
 * Two edges sharing this test's PostgreSQL schema and Redis prefix (every client key from the
 * shared key store: `--api-keys ''`) and one agent in front of `simUrl` joined to both; resolves
 * once the agent is registered with each edge.
 */
export async function startSharedEdges(
  isolated: { schema: string; prefix: string },
  agent: { id: string; simUrl: string; args?: string[] },
  /** More environment for both edges (settings by the naming rule, e.g. IOP_PRICING_MODELS). */
  edgeEnv: NodeJS.ProcessEnv = {},
): Promise<EdgeHandle[]> {
  const env = {
    ...edgeEnv,
    IOP_STORAGE_POSTGRES_URL: PG_URL,
    IOP_STORAGE_POSTGRES_SCHEMA: isolated.schema,
    IOP_STORAGE_REDIS_URL: REDIS_URL,
    IOP_STORAGE_REDIS_PREFIX: isolated.prefix,
    IOP_ADMIN_KEYS: ADMIN_KEY,
  };
  const edges = await Promise.all([
    startEdge({ env, args: ['--api-keys', ''] }),
    startEdge({ env, args: ['--api-keys', ''] }),
  ]);
  await startAgent({
    tunnelPort: edges[0]!.tunnelPort,
    id: agent.id,
    backendUrl: agent.simUrl,
    args: [
      '--edge',
      edges.map((edge) => `http://127.0.0.1:${edge.tunnelPort}`).join(','),
      ...(agent.args ?? []),
      '--join-token',
      JOIN_TOKEN,
    ],
  });
  for (const edge of edges) await edgeReady(edge);
  return edges;
}
