/**
 * Streams that end without the backend's usage are still billed, at GPU-like pacing (300 ms to
 * the first token, 40 ms per token, 200-token answers: 8 s each). A client that cancels a stream
 * never gets the final usage chunk, nor does one whose stream fails mid-way; the edge bills an
 * estimate (the prompt estimate plus one token per generated chunk), marked in the ledger
 * (`estimated_requests`), and counts it against the key's limits and budget, so cancelling just
 * before the end is no way around them. A normalized stream (Anthropic) that ends with an in-band
 * error is an error in the ledger, not a 200.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { startAgent, startEdge, startSim, stopAll, type EdgeHandle, type SimHandle } from './harness';
import { ADMIN_KEY, admin } from './shared-state-helpers';

const dataDir = mkdtempSync(path.join(os.tmpdir(), 'iop-usage-estimate-'));
const configFile = path.join(dataDir, 'edge.json');
writeFileSync(configFile, JSON.stringify({ apiKeys: [], keys: [] }));

let sim: SimHandle;
let edge: EdgeHandle;

beforeAll(async () => {
  sim = await startSim(['--models', 'sim-model', '--output-tokens', '200', '--ttft-ms', '300', '--itl-ms', '40']);
  edge = await startEdge({
    args: ['--config', configFile, '--api-keys', ''],
    env: { IOP_DATA_DIR: dataDir, IOP_ADMIN_KEYS: ADMIN_KEY },
  });
  await startAgent({ tunnelPort: edge.tunnelPort, id: 'agent-estimate', backendUrl: sim.url });
}, 60_000);

afterAll(stopAll);

async function newKey(name: string, settings: Record<string, unknown> = {}): Promise<{ id: string; key: string }> {
  const created = await admin(edge.url, 'POST', '/admin/keys', { name, ...settings });
  expect(created.status).toBe(201);
  return { id: created.body.id as string, key: created.body.key as string };
}

async function usageOf(keyId: string): Promise<Record<string, number>> {
  const usage = await admin(edge.url, 'GET', `/admin/usage?key=${keyId}&group_by=status&flush=true`);
  const rows = usage.body.data as Array<Record<string, number>>;
  expect(rows).toHaveLength(1);
  return rows[0]!;
}

/**
 * The key's one ledger row, once the edge has written it (a cancelled request ends a moment after the client leaves).
 */
async function ledgerRow(keyId: string): Promise<Record<string, number>> {
  for (let tries = 0; ; tries++) {
    const row = await admin(edge.url, 'GET', `/admin/usage?key=${keyId}&flush=true`);
    const rows = row.body.data as Array<Record<string, number>>;
    if ((rows[0]?.requests ?? 0) > 0 || tries > 50) return usageOf(keyId);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * A stream cancelled after the client read `read` tokens: a 499 billed at an estimate of at least those, far below the
 * 200 of a whole answer.
 */
async function expectCancelledEstimate(keyId: string, read: number): Promise<void> {
  const row = await ledgerRow(keyId);
  expect(row).toMatchObject({ status: 499, requests: 1, estimated_requests: 1 });
  expect(row.output_tokens).toBeGreaterThanOrEqual(read);
  expect(row.output_tokens).toBeLessThan(40);
  expect(row.input_tokens).toBeGreaterThan(0);
}

it('a Chat stream the client cancels mid-way is billed an estimate (499 in the ledger)', async () => {
  const { id, key } = await newKey('chat-cancel');
  const client = new OpenAI({ apiKey: key, baseURL: edge.baseURL, maxRetries: 0 });
  const stream = await client.chat.completions.create({
    model: 'sim-model',
    messages: [{ role: 'user', content: 'tell me a long story' }],
    stream: true,
  });
  let chunks = 0;
  for await (const chunk of stream) {
    if ((chunk.choices[0]?.delta.content ?? '') !== '') chunks++;
    if (chunks === 12) break; // the SDK aborts the request
  }
  await expectCancelledEstimate(id, 12);
}, 30_000);

it('an Anthropic stream the client cancels mid-way is billed an estimate', async () => {
  const { id, key } = await newKey('anthropic-cancel');
  const client = new Anthropic({ apiKey: key, baseURL: edge.url, maxRetries: 0 });
  const { data: stream, response } = await client.messages
    .create({
      model: 'sim-model',
      max_tokens: 400,
      stream: true,
      messages: [{ role: 'user', content: 'tell me a long story' }],
    })
    .withResponse();
  const requestId = response.headers.get('x-request-id');
  let deltas = 0;
  for await (const event of stream) {
    if (event.type === 'content_block_delta') deltas++;
    if (deltas === 12) break;
  }
  await expectCancelledEstimate(id, 12);
  // The completion log line says what the ledger says: the client left (499), not a 200.
  const completed = await edge.proc.waitFor(
    (line) => line.msg === 'request completed' && line.requestId === requestId,
    5_000,
  );
  expect(completed).toMatchObject({ status: 499 });
}, 30_000);

it("cancelled streams count against the key's budget: cancelling before the end does not get around it", async () => {
  const { id, key } = await newKey('budget', { budget: { maxTokens: 40, period: 'total' } });
  const client = new OpenAI({ apiKey: key, baseURL: edge.baseURL, maxRetries: 0 });
  const stream = await client.chat.completions.create({
    model: 'sim-model',
    messages: [{ role: 'user', content: 'hi' }],
    stream: true,
  });
  let chunks = 0;
  for await (const chunk of stream) {
    if (chunk.choices.length > 0) chunks++;
    if (chunks === 40) break;
  }
  await ledgerRow(id);
  const refused = await client.chat.completions
    .create({ model: 'sim-model', messages: [{ role: 'user', content: 'hi' }], stream: true })
    .catch((error: unknown) => error);
  expect(refused).toBeInstanceOf(OpenAI.RateLimitError);
  expect((refused as InstanceType<typeof OpenAI.RateLimitError>).message).toMatch(/budget/);
}, 30_000);

it('an Anthropic stream that ends with an in-band error is an error in the ledger, billed what it generated', async () => {
  const { id, key } = await newKey('anthropic-error');
  const fault = await fetch(`${sim.url}/_sim/faults`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ fault: 'error-chunk', 'fault-after': 5, count: 1 }),
  });
  expect(fault.status).toBe(200);
  const client = new Anthropic({ apiKey: key, baseURL: edge.url, maxRetries: 0 });
  const stream = await client.messages.create({
    model: 'sim-model',
    max_tokens: 400,
    stream: true,
    messages: [{ role: 'user', content: 'hi' }],
  });
  const failure = await (async () => {
    for await (const event of stream) void event;
  })().catch((error: unknown) => error);
  expect(failure).toBeInstanceOf(Error); // the SDK raises the in-band `error` event
  const row = await ledgerRow(id);
  expect(row.status).toBeGreaterThanOrEqual(500);
  // An Anthropic stream asks for usage on every chunk (message_start's prompt count), so the backend's
  // own count of what it generated before the fault is billed, not an estimate.
  expect(row).toMatchObject({ requests: 1, errors: 1, estimated_requests: 0 });
  expect(row.output_tokens).toBeGreaterThanOrEqual(5);
}, 30_000);

async function simFault(knobs: Record<string, unknown>): Promise<void> {
  const fault = await fetch(`${sim.url}/_sim/faults`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(knobs),
  });
  expect(fault.status).toBe(200);
}

it('output the gate holds back is billed too: a non-stream Anthropic request cancelled mid-generation', async () => {
  const { id, key } = await newKey('anthropic-held');
  const controller = new AbortController();
  const client = new Anthropic({ apiKey: key, baseURL: edge.url, maxRetries: 0 });
  // 300 ms to the first token, 40 ms per token: ~30 tokens generated by 1.5 s, none released yet.
  setTimeout(() => controller.abort(), 1_500);
  await expect(
    client.messages.create(
      { model: 'sim-model', max_tokens: 400, messages: [{ role: 'user', content: 'hi' }] },
      { signal: controller.signal },
    ),
  ).rejects.toThrow();
  const row = await ledgerRow(id);
  expect(row).toMatchObject({ status: 499, requests: 1, estimated_requests: 1 });
  expect(row.output_tokens).toBeGreaterThanOrEqual(15);
  expect(row.output_tokens).toBeLessThan(40);
}, 30_000);

it('a complete Chat stream that did not ask for usage is billed the backend’s exact usage (the edge asks for it), and the client gets no usage chunk', async () => {
  const { id, key } = await newKey('chat-no-usage');
  const client = new OpenAI({ apiKey: key, baseURL: edge.baseURL, maxRetries: 0 });
  const stream = await client.chat.completions.create({
    model: 'sim-model',
    max_tokens: 8,
    messages: [{ role: 'user', content: 'hi' }],
    stream: true,
  });
  const chunks: OpenAI.ChatCompletionChunk[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  expect(chunks.some((chunk) => chunk.usage !== undefined && chunk.usage !== null)).toBe(false);
  expect(chunks.at(-1)?.choices[0]?.finish_reason).toBe('length');
  const seen = (await (await fetch(`${sim.url}/_sim/requests`)).json()) as {
    data: Array<{ body?: { stream_options?: unknown } }>;
  };
  expect(seen.data.at(-1)?.body?.stream_options).toEqual({ include_usage: true });
  const row = await ledgerRow(id);
  expect(row).toMatchObject({ status: 200, requests: 1, estimated_requests: 0, output_tokens: 8 });
}, 30_000);

it('usage in an event whose data spans several lines is the backend’s, not an estimate', async () => {
  const { id, key } = await newKey('multiline-usage');
  await simFault({ fault: 'none', framing: 'multiline', count: 1 });
  const client = new OpenAI({ apiKey: key, baseURL: edge.baseURL, maxRetries: 0 });
  const stream = await client.chat.completions.create({
    model: 'sim-model',
    max_tokens: 5,
    messages: [{ role: 'user', content: 'hi' }],
    stream: true,
    stream_options: { include_usage: true },
  });
  let usage: OpenAI.CompletionUsage | undefined | null;
  for await (const chunk of stream) usage = chunk.usage ?? usage;
  expect(usage?.completion_tokens).toBe(5);
  const row = await ledgerRow(id);
  expect(row).toMatchObject({
    status: 200,
    estimated_requests: 0,
    input_tokens: usage!.prompt_tokens,
    output_tokens: 5,
  });
}, 30_000);

it('a request the backend refused, cancelled while it waits to retry, is billed nothing', async () => {
  const { id, key } = await newKey('refused');
  await simFault({ fault: '503', 'retry-after': 2, count: 1 });
  const controller = new AbortController();
  const client = new OpenAI({ apiKey: key, baseURL: edge.baseURL, maxRetries: 0 });
  setTimeout(() => controller.abort(), 600);
  await expect(
    client.chat.completions.create(
      { model: 'sim-model', messages: [{ role: 'user', content: 'hi' }], stream: true },
      { signal: controller.signal },
    ),
  ).rejects.toThrow();
  const row = await ledgerRow(id);
  expect(row).toMatchObject({ status: 499, requests: 1, input_tokens: 0, output_tokens: 0, estimated_requests: 0 });
}, 30_000);

it('an attempt the gate discards and retries is billed with the one it answers with (both reached the backend)', async () => {
  const { id, key } = await newKey('gate-retry');
  // The first attempt ends with an error chunk after 20 tokens; the gate retries before anything was released.
  await simFault({ fault: 'error-chunk', 'fault-after': 20, count: 1 });
  const client = new Anthropic({ apiKey: key, baseURL: edge.url, maxRetries: 0 });
  const message = await client.messages.create({
    model: 'sim-model',
    max_tokens: 30,
    messages: [{ role: 'user', content: 'hi' }],
  });
  expect(message.usage.output_tokens).toBe(30);
  const row = await ledgerRow(id);
  expect(row).toMatchObject({ status: 200, requests: 1, estimated_requests: 1 });
  // 30 of the answer + the discarded attempt's 20 chunks; its prompt twice.
  expect(row.output_tokens).toBeGreaterThanOrEqual(50);
  expect(row.output_tokens).toBeLessThanOrEqual(52);
  expect(row.input_tokens).toBeGreaterThan(message.usage.input_tokens);
}, 30_000);
