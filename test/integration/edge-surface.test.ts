/**
 * What a user sees first: `GET /` says iop is running; `GET /v1/models` answers Anthropic's SDK in
 * Anthropic's list shape; an overloaded Anthropic request is `529 Overloaded` on the status line;
 * an edge with only direct providers is ready.
 */
import http from 'node:http';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { API_KEY, startAgent, startEdge, startSim, stopAll, type EdgeHandle, type SimHandle } from './harness';
import { sleep } from '@iop/core';

let sim: SimHandle;
let edge: EdgeHandle;

function writeConfig(config: unknown): string {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'iop-edge-')), 'edge.json');
  writeFileSync(file, JSON.stringify(config));
  return file;
}

beforeAll(async () => {
  sim = await startSim(['--models', 'sim-model', '--output-tokens', '4']);
  edge = await startEdge({
    args: [
      '--config',
      writeConfig({
        pool: {
          modelGroups: [{ name: 'house', targets: [{ model: 'sim-model' }], queue: { maxQueued: 0, maxWaitMs: 0 } }],
        },
      }),
    ],
  });
  await startAgent({
    tunnelPort: edge.tunnelPort,
    id: 'agent-one',
    backendUrl: sim.url,
    models: ['sim-model'],
    args: ['--max-concurrency', '1'],
  });
});

afterAll(stopAll);

it('GET / answers that iop is running', async () => {
  const response = await fetch(`${edge.url}/`);
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/plain/);
  expect(await response.text()).toMatch(/^iop is running \(edge \d+\.\d+\.\d+\)/);
});

it('GET /v1/models answers the Anthropic SDK in Anthropic shape, OpenAI clients in OpenAI shape', async () => {
  const anthropic = new Anthropic({ apiKey: API_KEY, baseURL: edge.url, maxRetries: 0 });
  const page = await anthropic.models.list();
  const ids = page.data.map((model) => model.id);
  expect(ids).toEqual(['house', 'sim-model']);
  expect(page.data[0]).toEqual({
    type: 'model',
    id: 'house',
    display_name: 'house',
    created_at: '1970-01-01T00:00:00.000Z',
  });
  expect(page.has_more).toBe(false);
  const openai = (await (
    await fetch(`${edge.url}/v1/models`, { headers: { authorization: `Bearer ${API_KEY}` } })
  ).json()) as {
    object: string;
    data: Array<{ id: string; object: string }>;
  };
  expect(openai.object).toBe('list');
  expect(openai.data.map((model) => model.object)).toEqual(['model', 'model']);
});

it('an overloaded Anthropic request is "529 Overloaded" with an overloaded_error body', async () => {
  // The one slot is busy with a slow request; the group queues nothing: the next is refused.
  await fetch(`${sim.url}/_sim/faults`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ fault: 'slow-first-token', 'slow-ttft-ms': 2000, count: 1 }),
  });
  const slow = fetch(`${edge.baseURL}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'house', messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 }),
  });
  await sleep(300);
  const line = await new Promise<{ status: number; message: string; body: string }>((resolve, reject) => {
    const body = JSON.stringify({ model: 'house', max_tokens: 4, messages: [{ role: 'user', content: 'hi' }] });
    const req = http.request(
      `${edge.url}/v1/messages`,
      {
        method: 'POST',
        headers: { 'x-api-key': API_KEY, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      },
      (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => (text += chunk.toString()));
        res.on('end', () => resolve({ status: res.statusCode!, message: res.statusMessage!, body: text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
  expect(line.status).toBe(529);
  expect(line.message).toBe('Overloaded');
  expect(JSON.parse(line.body)).toMatchObject({ type: 'error', error: { type: 'overloaded_error' } });
  await slow;
});

it('an edge with only direct providers is ready', async () => {
  const direct = await startEdge({
    args: [
      '--config',
      writeConfig({
        pool: { directProviders: [{ id: 'direct-sim', baseUrl: `${sim.url}/v1`, models: ['sim-model'] }] },
      }),
    ],
  });
  const response = await fetch(`${direct.url}/readyz`);
  expect(response.status).toBe(200);
  expect(await response.json()).toEqual({ status: 'ready', agents: 0, directProviders: 1 });
  const none = await fetch(`${edge.url}/readyz`);
  expect(await none.json()).toEqual({ status: 'ready', agents: 1, directProviders: 0 });
});
