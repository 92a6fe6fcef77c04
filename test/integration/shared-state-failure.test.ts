/**
 * What happens when Redis or PostgreSQL goes away mid-run, for each `storage.onFailure` policy.
 * The test runs its own `redis-server` child on a free port (stopped and restarted here; the
 * machine's shared server is never touched) and reaches PostgreSQL through a TCP proxy it starts
 * and stops, so "the database is down" is real to the edge's drivers.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import OpenAI from 'openai';
import { edgeReady, eventually, startAgent, startEdge, startSim, stopAll, type EdgeHandle } from './harness';
import { ADMIN_KEY, PG_URL, admin, describeWithSharedState, dropIsolation, isolation } from './shared-state-helpers';
import { sleep } from '@iop/core';

const isolated = isolation('failure');

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** A Redis server of the test's own. */
class OwnRedis {
  private child: ChildProcess | undefined;
  constructor(readonly port: number) {}
  async start(): Promise<void> {
    this.child = spawn(
      'redis-server',
      ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('redis-server did not start')), 10_000);
      this.child!.stdout!.on('data', (chunk: Buffer) => {
        if (chunk.toString().includes('Ready to accept connections')) {
          clearTimeout(timer);
          resolve();
        }
      });
    });
  }
  async stop(): Promise<void> {
    const child = this.child;
    if (child === undefined || child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  }
}

/** A TCP proxy to PostgreSQL: `stop()` closes it and cuts every connection, as a server going down does. */
class PgProxy {
  private server: net.Server | undefined;
  private readonly sockets = new Set<net.Socket>();
  constructor(
    readonly port: number,
    private readonly target: { host: string; port: number },
  ) {}
  async start(): Promise<void> {
    this.server = net.createServer((client) => {
      const upstream = net.connect(this.target.port, this.target.host);
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on('close', () => this.sockets.delete(socket));
        socket.on('error', () => {});
      }
      client.pipe(upstream).pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((resolve) => this.server!.listen(this.port, '127.0.0.1', resolve));
  }
  async stop(): Promise<void> {
    const closed = new Promise((resolve) => this.server?.close(resolve));
    for (const socket of this.sockets) socket.destroy();
    await closed;
  }
}

describeWithSharedState(
  'shared state failures',
  () => {
    let redis: OwnRedis;
    let proxy: PgProxy;
    let open: EdgeHandle;
    let closed: EdgeHandle;
    let key: string;
    let keyId: string;

    beforeAll(async () => {
      redis = new OwnRedis(await freePort());
      await redis.start();
      const target = new URL(PG_URL);
      proxy = new PgProxy(await freePort(), { host: target.hostname, port: Number(target.port || 5432) });
      await proxy.start();
      const viaProxy = new URL(PG_URL);
      viaProxy.host = `127.0.0.1:${proxy.port}`;
      const sim = await startSim(['--models', 'sim-model', '--output-tokens', '20', '--itl-ms', '40']);
      const env = (onFailure: string) => ({
        IOP_STORAGE_POSTGRES_URL: viaProxy.toString(),
        IOP_STORAGE_POSTGRES_SCHEMA: isolated.schema,
        IOP_STORAGE_REDIS_URL: `redis://127.0.0.1:${redis.port}`,
        IOP_STORAGE_REDIS_PREFIX: isolated.prefix,
        IOP_STORAGE_ON_FAILURE: onFailure,
        IOP_ADMIN_KEYS: ADMIN_KEY,
      });
      open = await startEdge({ env: env('open'), args: ['--api-keys', ''] });
      closed = await startEdge({ env: env('closed'), args: ['--api-keys', ''] });
      await startAgent({
        tunnelPort: open.tunnelPort,
        id: 'agent-failure',
        backendUrl: sim.url,
        args: ['--edge', `http://127.0.0.1:${open.tunnelPort},http://127.0.0.1:${closed.tunnelPort}`],
      });
      await edgeReady(closed);
      const created = await admin(open.url, 'POST', '/admin/keys', {
        name: 'failure',
        limits: { requestsPerMinute: 1000, maxConcurrentStreams: 50 },
      });
      key = created.body.key as string;
      keyId = created.body.id as string;
    }, 60_000);

    afterAll(async () => {
      await stopAll();
      await redis?.stop();
      await proxy?.stop();
      await dropIsolation(isolated, PG_URL, '');
    });

    const ask = (
      edge: EdgeHandle,
    ): Promise<{ status: number; tokens: number; retryAfter?: string | null | undefined }> =>
      new OpenAI({ apiKey: key, baseURL: edge.baseURL, maxRetries: 0 }).chat.completions
        .create({ model: 'sim-model', messages: [{ role: 'user', content: 'hi' }] })
        .then(
          (answer) => ({ status: 200, tokens: answer.usage!.total_tokens }),
          (error: { status?: number; headers?: Headers }) => ({
            status: error.status ?? 0,
            tokens: 0,
            retryAfter: error.headers?.get('retry-after'),
          }),
        );

    it('Redis stopped mid-run: streams in flight finish; the open edge serves on local counters, the closed edge answers 503 until Redis is back', async () => {
      expect((await ask(open)).status).toBe(200);
      expect((await ask(closed)).status).toBe(200);
      // A stream in flight on each edge (20 tokens at 40 ms: about 0.8 s) while Redis goes down.
      const inFlight = Promise.all([ask(open), ask(closed)]);
      await sleep(200);
      await redis.stop();
      expect((await inFlight).map((result) => result.status)).toEqual([200, 200]);
      expect((await ask(open)).status).toBe(200);
      const refused = await ask(closed);
      expect(refused.status).toBe(503);
      expect(refused.retryAfter).toBe('1');
      await open.proc.waitFor(
        (line) => line.msg === "shared counters unavailable: failing open on this edge's own counters",
        5_000,
      );
      await redis.start();
      // ioredis reconnects on its own (at most every 2 s).
      await eventually(async () => (await ask(closed)).status === 200, 15_000, 250);
      expect((await ask(open)).status).toBe(200);
    }, 60_000);

    it('PostgreSQL stopped mid-run: answers go on from cached keys (open) while ledger rows wait, and every row is written once it is back', async () => {
      const before = await admin(open.url, 'GET', `/admin/usage?key=${keyId}&flush=true`);
      await admin(closed.url, 'GET', '/admin/usage?flush=true');
      const baseline = await admin(open.url, 'GET', `/admin/usage?key=${keyId}`);
      expect(before.status).toBe(200);
      const startRequests = (baseline.body.data as Array<{ requests: number }>)[0]!.requests;

      const inFlight = ask(open);
      await sleep(200);
      await proxy.stop();
      const results = [await inFlight];
      // Past the key cache's 2 s: the open edge answers from its stale cache entry.
      await sleep(2_500);
      for (let i = 0; i < 4; i++) results.push(await ask(open));
      expect(results.map((result) => result.status)).toEqual([200, 200, 200, 200, 200]);
      const refused = await ask(closed);
      expect(refused.status).toBe(503);
      // Stored responses need the database in either mode: a clean 5xx, never a hang.
      const storing = await new OpenAI({ apiKey: key, baseURL: open.baseURL, maxRetries: 0, timeout: 20_000 }).responses
        .create({ model: 'sim-model', input: 'hi' })
        .then(
          () => 200,
          (error: { status?: number }) => error.status ?? 0,
        );
      expect(storing).toBe(503);

      await proxy.start();
      let total = 0;
      await eventually(
        async () => {
          await admin(open.url, 'GET', '/admin/usage?flush=true');
          await admin(closed.url, 'GET', '/admin/usage?flush=true');
          const usage = await admin(open.url, 'GET', `/admin/usage?key=${keyId}&group_by=status`);
          const rows = (usage.body.data ?? []) as Array<{ status: number; requests: number }>;
          total = rows.reduce((sum, row) => sum + row.requests, 0);
          return usage.status === 200 && total >= startRequests + 6;
        },
        20_000,
        500,
      );
      // 5 answers and the Responses call on the open edge; the closed edge's 503 came before admission (no row).
      expect(total).toBe(startRequests + 6);
      const usage = await admin(open.url, 'GET', '/admin/usage');
      expect((usage.body.ledger as { dropped: number }).dropped).toBe(0);
    }, 90_000);
  },
  { pg: true, redis: false },
);
