/**
 * Keys, limits and the usage ledger for Gemini clients, as for the other dialects: a key with a
 * request limit gets the `x-ratelimit-*` headers and then 429 `RESOURCE_EXHAUSTED` in Google's
 * envelope; a key limited to other models 403 `PERMISSION_DENIED`; every request is a ledger row
 * under `dialect: "gemini"` with the tokens the client was told.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ApiError, GoogleGenAI } from '@google/genai';
import { startAgent, startEdge, startSim, stopAll, type EdgeHandle } from './harness';
import { ADMIN_KEY, admin, freshMinute } from './shared-state-helpers';

const LIMITED_KEY = 'sk-iop-gemini-limited-01';
const NARROW_KEY = 'sk-iop-gemini-narrow-001';
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'iop-gemini-keys-'));
const configFile = path.join(dataDir, 'edge.json');
writeFileSync(
  configFile,
  JSON.stringify({
    apiKeys: [],
    keys: [
      { id: 'limited', name: 'limited', owner: 'team', key: LIMITED_KEY, limits: { requestsPerMinute: 2 } },
      { id: 'narrow', name: 'narrow', owner: 'team', key: NARROW_KEY, models: ['other-model'] },
    ],
  }),
);

let edge: EdgeHandle;

beforeAll(async () => {
  const sim = await startSim(['--models', 'sim-model', '--output-tokens', '6']);
  edge = await startEdge({
    args: ['--config', configFile, '--api-keys', ''],
    env: { IOP_DATA_DIR: dataDir, IOP_ADMIN_KEYS: ADMIN_KEY },
  });
  await startAgent({ tunnelPort: edge.tunnelPort, id: 'agent-gemini-keys', backendUrl: sim.url });
}, 60_000);

afterAll(stopAll);

const client = (apiKey: string) =>
  new GoogleGenAI({ apiKey, httpOptions: { baseUrl: edge.url, fetch: (input, init) => fetch(input, init) } });

it('a request limit: the headers, then 429 RESOURCE_EXHAUSTED; ledger rows under dialect gemini', async () => {
  await freshMinute();
  const remaining: Array<string | null> = [];
  const told = { prompt: 0, candidates: 0 };
  for (let i = 0; i < 2; i++) {
    const response = await fetch(`${edge.url}/v1beta/models/sim-model:generateContent`, {
      method: 'POST',
      headers: { 'x-goog-api-key': LIMITED_KEY, 'content-type': 'application/json' },
      body: JSON.stringify({ contents: [{ parts: [{ text: 'hi' }] }] }),
    });
    expect(response.status).toBe(200);
    remaining.push(response.headers.get('x-ratelimit-remaining-requests'));
    const usage = (
      (await response.json()) as { usageMetadata: { promptTokenCount: number; candidatesTokenCount: number } }
    ).usageMetadata;
    told.prompt += usage.promptTokenCount;
    told.candidates += usage.candidatesTokenCount;
  }
  expect(remaining).toEqual(['1', '0']);
  const refused = await client(LIMITED_KEY)
    .models.generateContent({ model: 'sim-model', contents: 'hi' })
    .catch((error: unknown) => error);
  expect(refused).toBeInstanceOf(ApiError);
  expect((refused as ApiError).status).toBe(429);
  const body = JSON.parse((refused as ApiError).message.replace(/^[^{]*/, '')) as {
    error: { status: string; details?: Array<Record<string, unknown>> };
  };
  expect(body.error.status).toBe('RESOURCE_EXHAUSTED');
  expect(body.error.details?.[0]).toMatchObject({
    '@type': 'type.googleapis.com/google.rpc.RetryInfo',
    retryDelay: expect.stringMatching(/^\d+s$/),
  });

  const usage = await admin(edge.url, 'GET', '/admin/usage?key=limited&group_by=dialect&flush=true');
  expect(usage.body.data).toEqual([
    expect.objectContaining({
      dialect: 'gemini',
      requests: 3,
      errors: 1,
      input_tokens: told.prompt,
      output_tokens: told.candidates,
    }),
  ]);
}, 90_000);

it('a key limited to other models is 403 PERMISSION_DENIED', async () => {
  const refused = await client(NARROW_KEY)
    .models.generateContent({ model: 'sim-model', contents: 'hi' })
    .catch((error: unknown) => error);
  expect((refused as ApiError).status).toBe(403);
  expect((refused as ApiError).message).toContain('PERMISSION_DENIED');
});
