/** The lone-request rounds: one request at a time per target, in blocks whose first request is not counted. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from 'undici';
import { formatLone, runLoneRounds, type LoneTarget } from '../../src/lone-request';

let server: http.Server;
let origin: string;
const seen = { nonStream: 0, stream: 0, inFlight: 0, maxInFlight: 0 };

beforeAll(async () => {
  server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      seen.inFlight++;
      seen.maxInFlight = Math.max(seen.maxInFlight, seen.inFlight);
      const stream = (JSON.parse(body) as { stream: boolean }).stream;
      res.on('finish', () => seen.inFlight--);
      if (!stream) {
        seen.nonStream++;
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ choices: [{ message: { content: 'hi' } }] }));
        return;
      }
      seen.stream++;
      res.setHeader('content-type', 'text/event-stream');
      res.write('data: {"choices":[{"delta":{"role":"assistant","content":""}}]}\n\n');
      res.write('data: {"choices":[{"delta":{"content":"hi"}}]}\n\n');
      res.end('data: [DONE]\n\n');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => new Promise((resolve) => server.close(resolve)));

it('sends blocks of 50 to each target in turn, one at a time, and counts all but the first of each block', async () => {
  const targets: LoneTarget[] = ['direct', 'iop'].map((name) => ({
    name,
    origin,
    client: new Client(origin, { pipelining: 1 }),
  }));
  const results = await runLoneRounds(targets, 49, 49);
  await Promise.all(targets.map((target) => target.client.close()));
  // Two blocks (one of warm-up, one counted) per target and mode.
  expect(seen.nonStream).toBe(2 * 2 * 50);
  expect(seen.stream).toBe(2 * 2 * 50);
  expect(seen.maxInFlight).toBe(1);
  expect(results.map((result) => [result.target, result.total.count, result.ttft.count, result.errors])).toEqual([
    ['direct', 49, 49, 0],
    ['iop', 49, 49, 0],
  ]);
  expect(results[0]!.ttft.p50).toBeGreaterThan(0);
});

it('prints what each target adds over direct at p50 and p90', () => {
  const summary = (p50: number, p90: number) => ({ count: 1, p50, p90, p99: p90, mean: p50, max: p90 });
  const table = formatLone([
    { target: 'direct', total: summary(0.1, 0.2), ttft: summary(0.15, 0.25), errors: 0 },
    { target: 'iop', total: summary(0.9, 1.3), ttft: summary(1.05, 1.5), errors: 2 },
  ]).split('\n');
  expect(table[2]).toBe('| direct | 0.100 | 0.200 | 0.200 |  |  | 0.150 | 0.250 | 0.250 |  |  | 0 |');
  expect(table[3]).toBe(
    '| iop | 0.900 | 1.300 | 1.300 | +0.800 | +1.100 | 1.050 | 1.500 | 1.500 | +0.900 | +1.250 | 2 |',
  );
});
