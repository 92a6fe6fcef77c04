/**
 * No retry storms: when every provider fails, the pool-wide retry budget caps the retries at
 * `budgetRatio` × client requests (+ `minRetriesPerSecond`, here 0), whatever each request's own
 * attempt limit would allow. Every client still gets a well-formed 503 (each retry waits the sim's `Retry-After: 1`).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import {
  API_KEY,
  simRequests,
  startAgent,
  startEdge,
  startSim,
  stopAll,
  type EdgeHandle,
  type SimHandle,
} from './harness';

const REQUESTS = 40;
let sims: SimHandle[];
let edge: EdgeHandle;

beforeAll(async () => {
  sims = [
    await startSim(['--models', 'sim-model', '--fault', '503']),
    await startSim(['--models', 'sim-model', '--fault', '503']),
  ];
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'iop-edge-')), 'edge.json');
  writeFileSync(
    file,
    JSON.stringify({
      pool: {
        retry: { maxAttempts: 5, budgetRatio: 0.1, minRetriesPerSecond: 0, baseBackoffMs: 0, maxBackoffMs: 2000 },
        outlier: { consecutiveFailures: 1000 },
      },
    }),
  );
  edge = await startEdge({ args: ['--config', file] });
  await startAgent({ tunnelPort: edge.tunnelPort, id: 'agent-1', backendUrl: sims[0]!.url, models: ['sim-model'] });
  await startAgent({ tunnelPort: edge.tunnelPort, id: 'agent-2', backendUrl: sims[1]!.url, models: ['sim-model'] });
});

afterAll(stopAll);

it('caps retries at the budget when the whole pool fails', async () => {
  const client = new OpenAI({ apiKey: API_KEY, baseURL: edge.baseURL, maxRetries: 0 });
  for (let i = 0; i < REQUESTS; i++) {
    const error = await client.chat.completions
      .create({ model: 'sim-model', messages: [{ role: 'user', content: 'hi' }] })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(503);
  }
  // The agents' startup probes (/tokenize) are not chat completions.
  const chat = [...(await simRequests(sims[0]!)), ...(await simRequests(sims[1]!))].filter(
    (record) => record.path === '/v1/chat/completions',
  ).length;
  expect(chat).toBeGreaterThanOrEqual(REQUESTS);
  expect(chat).toBeLessThanOrEqual(REQUESTS + Math.ceil(0.1 * REQUESTS));
  const metrics = await (await fetch(`${edge.url}/metrics`)).text();
  expect(metrics).toMatch(/iop_pool_retries_total\{group="sim-model",reason="budget_exhausted"\} [1-9]/);
});
