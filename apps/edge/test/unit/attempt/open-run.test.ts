/**
 * `openRun` with a single provider (a direct provider in front of a local HTTP backend): a
 * retryable failure before the first byte is retried on that same provider after the backoff; a
 * provider ejected as an outlier is not asked again and the client gets the backend's failure.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { openRun } from '../../../src/attempt/open-run.js';
import { makePool, trackPools } from '../pool/fixtures.js';

const track = trackPools();
let server: http.Server;
let baseUrl: string;
/** Statuses the backend answers, one per request; 200 (a short SSE answer) when empty. */
const statuses: number[] = [];
const received: number[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received.push(Date.now());
      const status = statuses.shift() ?? 200;
      if (status !== 200) {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: `status ${status}`, type: 'server_error' } }));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end('data: {"choices":[{"index":0,"delta":{"content":"hi"}}]}\n\ndata: [DONE]\n\n');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

beforeEach(() => {
  statuses.length = 0;
  received.length = 0;
});

const log = pino({ level: 'silent' });
const request = {
  requestId: 'req-1',
  model: 'm',
  method: 'POST',
  path: '/v1/chat/completions',
  bodyFor: () => Buffer.from('{"model":"m"}'),
  acceptedTimeoutMs: 2000,
};

function onePool(outlier: Record<string, unknown> = {}) {
  return track(
    makePool({
      directProviders: [{ id: 'only', baseUrl, models: ['m'] }],
      retry: { maxAttempts: 3, baseBackoffMs: 40, maxBackoffMs: 1000 },
      outlier,
    }),
  );
}

describe('openRun with a single provider', () => {
  it('retries a 500 before the first byte on the same provider after the backoff', async () => {
    const { pool } = onePool();
    statuses.push(500);
    const attempts = pool.begin();
    const opened = await openRun(pool, { ...request, attempts }, log, () => {});
    expect(opened.start.status).toBe(200);
    opened.run.cancel('done');
    expect(attempts.count).toBe(2);
    expect([...attempts.tried]).toEqual(['only']);
    expect(received).toHaveLength(2);
    // Equal jitter on the same provider: at least half the first backoff (20 ms) between the two.
    expect(received[1]! - received[0]!).toBeGreaterThanOrEqual(19);
  });

  it('gives the client the last failure after maxAttempts, every attempt reaching the provider', async () => {
    const { pool } = onePool();
    statuses.push(502, 502, 502);
    const attempts = pool.begin();
    await expect(openRun(pool, { ...request, attempts }, log, () => {})).rejects.toMatchObject({ status: 502 });
    expect(attempts.count).toBe(3);
    expect(received).toHaveLength(3);
  });

  it('does not ask a provider again once it is ejected as an outlier', async () => {
    const { pool } = onePool({ consecutiveFailures: 1, maxEjectedPercent: 100 });
    statuses.push(503, 503);
    const attempts = pool.begin();
    await expect(openRun(pool, { ...request, attempts }, log, () => {})).rejects.toMatchObject({
      status: 503,
      message: expect.stringContaining('status 503'),
    });
    expect(attempts.count).toBe(1);
    expect(received).toHaveLength(1);
  });

  it('does not retry a 4xx', async () => {
    const { pool } = onePool();
    statuses.push(422);
    await expect(openRun(pool, request, log, () => {})).rejects.toMatchObject({ status: 422 });
    expect(received).toHaveLength(1);
  });
});
