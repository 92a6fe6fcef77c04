/**
 * One agent serving a model. A retryable failure before the first byte is retried on that same
 * provider after the backoff (there is no other one), so a single 500 never reaches the client on
 * either output path; when the agent is gone (restarting), a name the edge knows — a served model
 * seen since start, a configured group or alias — is a retryable 503 `no_capacity` with
 * `Retry-After` (Anthropic: 529 `overloaded_error`), and only a name never served stays a 404.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import {
  API_KEY,
  eventually,
  startAgent,
  startEdge,
  startSim,
  stopAll,
  type EdgeHandle,
  type Proc,
  type SimHandle,
} from './harness';
import { chatRequests, clearSim, queueFault } from './stream-gate-helpers';

let sim: SimHandle;
let edge: EdgeHandle;
let agent: Proc;
let openai: OpenAI;
let anthropic: Anthropic;

beforeAll(async () => {
  sim = await startSim(['--models', 'sim-model', '--output-tokens', '4']);
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'iop-edge-')), 'edge.json');
  writeFileSync(
    file,
    JSON.stringify({
      pool: {
        modelGroups: [{ name: 'house', aliases: ['gpt-house', 'claude-house'], targets: [{ model: 'sim-model' }] }],
        retry: { maxAttempts: 3, baseBackoffMs: 20, maxBackoffMs: 2000 },
      },
    }),
  );
  edge = await startEdge({ args: ['--config', file] });
  agent = await startAgent({
    tunnelPort: edge.tunnelPort,
    id: 'agent-only',
    backendUrl: sim.url,
    models: ['sim-model'],
  });
  openai = new OpenAI({ apiKey: API_KEY, baseURL: edge.baseURL, maxRetries: 0 });
  anthropic = new Anthropic({ apiKey: API_KEY, baseURL: edge.url, maxRetries: 0 });
});

beforeEach(() => clearSim(sim));

afterAll(stopAll);

const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [{ role: 'user', content: 'hi' }];

describe('a single provider is retried on itself', () => {
  it('one 500 before the first byte (passthrough): the openai client gets a 200, the sim saw 2 requests', async () => {
    await queueFault(sim, { fault: '500', count: 1, 'retry-after': 0 });
    const { data, response } = await openai.chat.completions.create({ model: 'sim-model', messages }).withResponse();
    expect(data.choices[0]!.finish_reason).toBe('stop');
    expect(response.headers.get('x-iop-agent-id')).toBe('agent-only');
    const records = await chatRequests(sim);
    expect(records.map((record) => record.status)).toEqual([500, 200]);
    await edge.proc.waitFor(
      (line) =>
        line.msg === 'attempt failed before its first byte; retrying' && String(line.reason).includes('same provider'),
      5_000,
    );
  });

  it.each(['malformed', 'no-done'])(
    'a non-stream answer the backend breaks (%s) reached no client byte: retried, a 200',
    async (fault) => {
      await queueFault(sim, { fault, count: 1 });
      const completion = await openai.chat.completions.create({ model: 'sim-model', messages });
      expect(completion.choices[0]!.finish_reason).toBe('stop');
      expect(completion.choices[0]!.message.content!.length).toBeGreaterThan(0);
      expect(await chatRequests(sim)).toHaveLength(2);
    },
  );

  it('one 500 before the first byte (normalized, Anthropic): a 200, the sim saw 2 requests', async () => {
    await queueFault(sim, { fault: '500', count: 1, 'retry-after': 0 });
    const message = await anthropic.messages.create({
      model: 'claude-house',
      max_tokens: 16,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(message.stop_reason).toBe('end_turn');
    expect((await chatRequests(sim)).map((record) => record.status)).toEqual([500, 200]);
  });

  it('a 503 with Retry-After: 1 is asked again after that second', async () => {
    await queueFault(sim, { fault: '503', count: 1, 'retry-after': 1 });
    const started = Date.now();
    const { data } = await openai.chat.completions.create({ model: 'gpt-house', messages }).withResponse();
    expect(data.model).toBe('gpt-house');
    const records = await chatRequests(sim);
    expect(records.map((record) => record.status)).toEqual([503, 200]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
  });

  it('a 500 that persists: the client gets it after 3 attempts, each one asked of the provider', async () => {
    await queueFault(sim, { fault: '500', count: 3, 'retry-after': 0 });
    const error = await anthropic.messages
      .create({ model: 'sim-model', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(Anthropic.InternalServerError);
    expect((error as Error).message).toContain('(after 3 attempts)');
    expect((await chatRequests(sim)).map((record) => record.status)).toEqual([500, 500, 500]);
  });
});

describe('the only agent is gone (restarting)', () => {
  beforeAll(async () => {
    await agent.kill();
    await eventually(
      () => edge.proc.lines.some((line) => line.msg === 'agent left' && line.agentId === 'agent-only'),
      10_000,
    );
  });

  it.each(['sim-model', 'house', 'gpt-house'])('OpenAI: %s is a 503 no_capacity with retry-after', async (model) => {
    const error = await openai.chat.completions.create({ model, messages }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    const apiError = error as InstanceType<typeof OpenAI.APIError>;
    expect(apiError.status).toBe(503);
    expect(apiError.code).toBe('no_capacity');
    expect(apiError.headers?.get('retry-after')).toBe('1');
  });

  it.each(['sim-model', 'claude-house'])('Anthropic: %s is a 529 overloaded_error', async (model) => {
    const error = await anthropic.messages
      .create({ model, max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(Anthropic.APIError);
    const apiError = error as InstanceType<typeof Anthropic.APIError>;
    expect(apiError.status).toBe(529);
    expect((apiError.error as { error?: { type?: string } }).error?.type).toBe('overloaded_error');
    // count_tokens answers the same way: the name is known, only its providers are away.
    const counted = await anthropic.messages
      .countTokens({ model, messages: [{ role: 'user', content: 'hi' }] })
      .catch((caught: unknown) => caught);
    expect((counted as InstanceType<typeof Anthropic.APIError>).status).toBe(529);
  });

  it('a name never served is still a 404 model_not_found', async () => {
    const error = await openai.chat.completions
      .create({ model: 'never-served', messages })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.NotFoundError);
    expect((error as InstanceType<typeof OpenAI.NotFoundError>).code).toBe('model_not_found');
    const anthropicError = await anthropic.messages
      .create({ model: 'never-served', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] })
      .catch((caught: unknown) => caught);
    expect(anthropicError).toBeInstanceOf(Anthropic.NotFoundError);
  });
});
