/**
 * A direct provider (an OpenAI-compatible base URL, no agent) in the same pool as a tunnelled
 * agent: both paths work on it, its failures are retried on the agent, and a client that leaves
 * aborts its upstream request.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import {
  API_KEY,
  eventually,
  simRequests,
  startAgent,
  startEdge,
  startSim,
  stopAll,
  type EdgeHandle,
  type SimHandle,
} from './harness';

let direct: SimHandle;
let tunnelled: SimHandle;
let edge: EdgeHandle;
let openai: OpenAI;

beforeAll(async () => {
  direct = await startSim(['--models', 'sim-model', '--output-tokens', '6', '--itl-ms', '2']);
  tunnelled = await startSim(['--models', 'sim-model', '--output-tokens', '6']);
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'iop-edge-')), 'edge.json');
  writeFileSync(
    file,
    JSON.stringify({
      pool: {
        modelGroups: [
          { name: 'direct-only', targets: [{ model: 'sim-model', agents: { labels: { kind: 'direct' } } }] },
          { name: 'mixed', targets: [{ model: 'sim-model' }] },
          { name: 'direct-slow', targets: [{ model: 'sim-model@itl-ms=50' }] },
        ],
        directProviders: [
          {
            id: 'direct-sim',
            baseUrl: `${direct.url}/v1`,
            apiKey: 'sk-upstream-0001',
            models: ['sim-model', 'sim-model@itl-ms=50'],
            labels: { kind: 'direct' },
          },
        ],
      },
    }),
  );
  edge = await startEdge({ args: ['--config', file] });
  await startAgent({ tunnelPort: edge.tunnelPort, id: 'agent-t', backendUrl: tunnelled.url, models: ['sim-model'] });
  openai = new OpenAI({ apiKey: API_KEY, baseURL: edge.baseURL, maxRetries: 0 });
});

afterAll(stopAll);

it('serves passthrough streams and non-stream answers, with its own key upstream', async () => {
  const { data, response } = await openai.chat.completions
    .create({ model: 'direct-only', messages: [{ role: 'user', content: 'hi' }] })
    .withResponse();
  expect(response.headers.get('x-iop-agent-id')).toBe('direct-sim');
  expect(data.model).toBe('direct-only');
  expect(data.usage?.completion_tokens).toBe(6);
  const stream = await openai.chat.completions.create({
    model: 'direct-only',
    messages: [{ role: 'user', content: 'hi' }],
    stream: true,
    stream_options: { include_usage: true },
  });
  let text = '';
  let usage: OpenAI.CompletionUsage | null | undefined;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta.content ?? '';
    usage = chunk.usage ?? usage;
  }
  expect(text.length).toBeGreaterThan(0);
  expect(usage?.completion_tokens).toBe(6);
  const last = (await simRequests(direct)).at(-1)!;
  expect((last.headers as Record<string, string>).authorization).toBe('Bearer sk-upstream-0001');
});

it('serves the normalized path (Anthropic Messages)', async () => {
  const anthropic = new Anthropic({ apiKey: API_KEY, baseURL: edge.url, maxRetries: 0 });
  const { data, response } = await anthropic.messages
    .create({ model: 'direct-only', max_tokens: 32, messages: [{ role: 'user', content: 'hi' }] })
    .withResponse();
  expect(response.headers.get('x-iop-agent-id')).toBe('direct-sim');
  expect(data.stop_reason).toBe('end_turn');
  expect(data.usage.output_tokens).toBe(6);
});

it('a 503 on the direct provider is retried on the agent', async () => {
  await fetch(`${direct.url}/_sim/faults`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ fault: '503', count: 1 }),
  });
  await eventually(
    async () => {
      const { response } = await openai.chat.completions
        .create({ model: 'mixed', messages: [{ role: 'user', content: 'hi' }] })
        .withResponse();
      const { queuedFaults } = (await (await fetch(`${direct.url}/_sim/stats`)).json()) as { queuedFaults: number };
      if (queuedFaults > 0) return false;
      expect(response.headers.get('x-iop-agent-id')).toBe('agent-t');
      return true;
    },
    20_000,
    0,
  );
});

it('a client that leaves aborts the upstream request', async () => {
  const controller = new AbortController();
  const stream = await openai.chat.completions.create(
    { model: 'direct-slow', messages: [{ role: 'user', content: 'hi' }], stream: true },
    { signal: controller.signal },
  );
  for await (const chunk of stream) {
    expect(chunk.model).toBe('direct-slow');
    break;
  }
  controller.abort();
  await eventually(async () => (await simRequests(direct)).at(-1)!.aborted === true, 10_000);
  expect((await simRequests(direct)).at(-1)!.completed).toBe(false);
});
