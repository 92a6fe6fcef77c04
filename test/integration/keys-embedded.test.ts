/**
 * Keys, limits and the usage ledger on the embedded default (SQLite, in-memory counters: no
 * server), with a key from the config file and one from the admin API, and the ledger surviving a
 * graceful restart of the edge.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { startAgent, startEdge, startSim, stopAll, type EdgeHandle, type SimHandle } from './harness';
import { ADMIN_KEY, admin, freshMinute } from './shared-state-helpers';

const CONFIG_KEY = 'sk-iop-config-key-0001';
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'iop-keys-'));
const configFile = path.join(dataDir, 'edge.json');
writeFileSync(
  configFile,
  JSON.stringify({
    apiKeys: [],
    keys: [{ id: 'ci', name: 'CI', owner: 'platform', key: CONFIG_KEY, limits: { requestsPerMinute: 3 } }],
  }),
);

let sim: SimHandle;
let edge: EdgeHandle;

async function start(): Promise<EdgeHandle> {
  const started = await startEdge({
    args: ['--config', configFile, '--api-keys', ''],
    env: { IOP_DATA_DIR: dataDir, IOP_ADMIN_KEYS: ADMIN_KEY },
  });
  await startAgent({ tunnelPort: started.tunnelPort, id: 'agent-keys', backendUrl: sim.url });
  return started;
}

beforeAll(async () => {
  sim = await startSim(['--models', 'sim-model', '--output-tokens', '10']);
  edge = await start();
}, 60_000);

afterAll(stopAll);

it('a config key with a request limit: headers, then a 429 in each dialect', async () => {
  await freshMinute();
  const client = new OpenAI({ apiKey: CONFIG_KEY, baseURL: edge.baseURL, maxRetries: 0 });
  for (let i = 0; i < 3; i++) {
    const { response } = await client.chat.completions
      .create({ model: 'sim-model', messages: [{ role: 'user', content: 'hi' }] })
      .withResponse();
    expect(response.headers.get('x-ratelimit-remaining-requests')).toBe(String(2 - i));
  }
  await expect(
    client.chat.completions.create({ model: 'sim-model', messages: [{ role: 'user', content: 'hi' }] }),
  ).rejects.toBeInstanceOf(OpenAI.RateLimitError);
  const refused = await new Anthropic({ apiKey: CONFIG_KEY, baseURL: edge.url, maxRetries: 0 }).messages
    .create({ model: 'sim-model', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] })
    .catch((error: unknown) => error);
  expect(refused).toBeInstanceOf(Anthropic.RateLimitError);
  expect(
    (refused as InstanceType<typeof Anthropic.RateLimitError>).headers?.get('anthropic-ratelimit-requests-remaining'),
  ).toBe('0');
  // Without a key the edge is not open: keys exist.
  await expect(
    new OpenAI({ apiKey: 'sk-nobody-000000', baseURL: edge.baseURL, maxRetries: 0 }).models.list(),
  ).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
}, 60_000);

it('an admin key on SQLite, and a ledger kept across a graceful restart', async () => {
  const created = await admin(edge.url, 'POST', '/admin/keys', {
    name: 'local',
    budget: { maxTokens: 1_000_000, period: 'month' },
  });
  expect(created.status).toBe(201);
  const key = created.body.key as string;
  const answer = await new OpenAI({ apiKey: key, baseURL: edge.baseURL, maxRetries: 0 }).chat.completions.create({
    model: 'sim-model',
    messages: [{ role: 'user', content: 'hi' }],
  });
  // SIGTERM: the queued ledger rows are written before the edge exits.
  await edge.proc.kill('SIGTERM');
  edge = await start();
  const usage = await admin(edge.url, 'GET', `/admin/usage?key=${created.body.id as string}`);
  expect(usage.body.data).toEqual([
    {
      requests: 1,
      input_tokens: answer.usage!.prompt_tokens,
      output_tokens: answer.usage!.completion_tokens,
      cached_tokens: 0,
      reasoning_tokens: 0,
      errors: 0,
      estimated_requests: 0,
      cost_usd: 0,
    },
  ]);
  const byKey = await admin(edge.url, 'GET', '/admin/usage?group_by=key');
  expect(
    (byKey.body.data as Array<{ key: string; requests: number; errors: number }>).find((row) => row.key === 'ci'),
  ).toMatchObject({
    requests: 5,
    errors: 2,
  });
  // Names of Object.prototype are no grouping either: a 400 naming them, never a query.
  for (const group of ['__proto__', 'toString', 'constructor']) {
    const refused = await admin(edge.url, 'GET', `/admin/usage?group_by=${group}`);
    expect(refused.status).toBe(400);
    expect(JSON.stringify(refused.body)).toContain(`unknown group_by \\"${group}\\"`);
  }
  const listed = await admin(edge.url, 'GET', '/admin/keys');
  expect((listed.body.data as Array<{ id: string; source: string }>).map((entry) => [entry.id, entry.source])).toEqual([
    ['ci', 'config'],
    [created.body.id, 'admin'],
  ]);
  // The key still works after the restart (stored hashed in state.sqlite).
  await expect(
    new OpenAI({ apiKey: key, baseURL: edge.baseURL, maxRetries: 0 }).chat.completions.create({
      model: 'sim-model',
      messages: [{ role: 'user', content: 'hi' }],
    }),
  ).resolves.toMatchObject({ object: 'chat.completion' });
}, 60_000);

it('a stream that ends with an in-band error is an error in the ledger, not a 200', async () => {
  const created = await admin(edge.url, 'POST', '/admin/keys', { name: 'streams' });
  const client = new OpenAI({ apiKey: created.body.key as string, baseURL: edge.baseURL, maxRetries: 0 });
  const fault = await fetch(`${sim.url}/_sim/faults`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ fault: 'error-chunk', 'fault-after': 8, 'itl-ms': 20, count: 1 }),
  });
  expect(fault.status).toBe(200);
  const stream = await client.chat.completions.create({
    model: 'sim-model',
    messages: [{ role: 'user', content: 'hi' }],
    stream: true,
  });
  const failure = await (async () => {
    for await (const chunk of stream) void chunk;
  })().catch((error: unknown) => error);
  expect(failure).toBeInstanceOf(Error); // the SDK raises the in-band error event
  const complete = await client.chat.completions.create({
    model: 'sim-model',
    messages: [{ role: 'user', content: 'hi' }],
    stream: true,
  });
  for await (const chunk of complete) void chunk;
  const usage = await admin(edge.url, 'GET', `/admin/usage?key=${created.body.id as string}&flush=true`);
  expect(usage.body.data).toMatchObject([{ requests: 2, errors: 1 }]);
}, 60_000);
