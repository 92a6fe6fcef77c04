/**
 * Failures before the first byte never reach the client when a retry can hide them: two sims
 * behind two agents, faults queued on sim B (`POST /_sim/faults`), requests on both output paths
 * (passthrough: OpenAI Chat; normalized through the stream gate: Anthropic Messages). A status
 * answer is retried on another provider when the group has one, else on the same provider after
 * its `Retry-After` (never at once), and a context overflow goes to the configured longer-context
 * group, never to the same model again.
 */
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
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

/** Context window of the small model; a prompt longer than this overflows it. */
const SMALL = 'sim-model@max-model-len=64';

let simA: SimHandle;
let simB: SimHandle;
let edge: EdgeHandle;
let openai: OpenAI;
let anthropic: Anthropic;

export function writeConfig(config: unknown): string {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'iop-edge-')), 'edge.json');
  writeFileSync(file, JSON.stringify(config));
  return file;
}

beforeAll(async () => {
  simA = await startSim(['--models', 'sim-model', '--output-tokens', '6']);
  simB = await startSim(['--models', 'sim-model', '--output-tokens', '6']);
  const config = writeConfig({
    firstByteTimeoutMs: 800,
    pool: {
      modelGroups: [
        { name: 'story-small', targets: [{ model: SMALL }], contextFallback: 'story' },
        { name: 'story', aliases: ['gpt-4o-mini', 'claude-house-model'], targets: [{ model: 'sim-model' }] },
        { name: 'tiny', targets: [{ model: SMALL }] },
        { name: 'only-b', targets: [{ model: 'sim-model', agents: { labels: { host: 'b' } } }] },
      ],
      retry: { maxAttempts: 3, baseBackoffMs: 10, maxBackoffMs: 2000 },
      outlier: { consecutiveFailures: 50 },
    },
  });
  edge = await startEdge({ args: ['--config', config] });
  await startAgent({
    tunnelPort: edge.tunnelPort,
    id: 'agent-a',
    backendUrl: simA.url,
    models: ['sim-model', SMALL],
    args: ['--labels', 'host=a'],
  });
  await startAgent({
    tunnelPort: edge.tunnelPort,
    id: 'agent-b',
    backendUrl: simB.url,
    models: ['sim-model'],
    args: ['--labels', 'host=b'],
  });
  openai = new OpenAI({ apiKey: API_KEY, baseURL: edge.baseURL, maxRetries: 0 });
  anthropic = new Anthropic({ apiKey: API_KEY, baseURL: edge.url, maxRetries: 0 });
});

afterAll(stopAll);

afterEach(async () => {
  await Promise.all([simA, simB].map((sim) => fetch(`${sim.url}/_sim/faults`, { method: 'DELETE' })));
});

async function queueFault(sim: SimHandle, fault: Record<string, unknown>): Promise<void> {
  const response = await fetch(`${sim.url}/_sim/faults`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(fault),
  });
  expect(response.status).toBe(200);
}

async function faulted(sim: SimHandle): Promise<number> {
  return ((await (await fetch(`${sim.url}/_sim/stats`)).json()) as { faulted: number }).faulted;
}

interface Answer {
  agent: string | null;
  text: string;
}

const viaChat = async (model = 'sim-model'): Promise<Answer> => {
  const { data, response } = await openai.chat.completions
    .create({ model, messages: [{ role: 'user', content: 'hello there' }], stream: true })
    .withResponse();
  let text = '';
  let finish: string | null = null;
  for await (const chunk of data) {
    text += chunk.choices[0]?.delta.content ?? '';
    finish = chunk.choices[0]?.finish_reason ?? finish;
  }
  expect(finish).toBe('stop');
  return { agent: response.headers.get('x-iop-agent-id'), text };
};

const viaMessages = async (model = 'sim-model'): Promise<Answer> => {
  const { data, response } = await anthropic.messages
    .create({ model, max_tokens: 64, messages: [{ role: 'user', content: 'hello there' }] })
    .withResponse();
  expect(data.stop_reason).toBe('end_turn');
  return {
    agent: response.headers.get('x-iop-agent-id'),
    text: data.content.map((block) => (block.type === 'text' ? block.text : '')).join(''),
  };
};

/**
 * Sends requests until sim B has served its queued fault; every one must succeed, and the one
 * that met the fault must have been answered by agent A. Returns that request's duration.
 */
async function hiddenFault(ask: () => Promise<Answer>, fault: Record<string, unknown>): Promise<number> {
  await queueFault(simB, { ...fault, count: 1 });
  const before = await faulted(simB);
  for (let i = 0; i < 40; i++) {
    const started = Date.now();
    const answer = await ask();
    expect(answer.text.length).toBeGreaterThan(0);
    if ((await faulted(simB)) > before) {
      expect(answer.agent).toBe('agent-a');
      return Date.now() - started;
    }
  }
  throw new Error('the fault was never drawn');
}

describe.each([
  ['passthrough (OpenAI Chat)', viaChat],
  ['normalized (Anthropic Messages)', viaMessages],
])('before the first byte, %s', (_name, ask) => {
  it('a 503 is retried on the other provider', async () => {
    await hiddenFault(ask, { fault: '503' });
  });

  it('a connection reset is retried on the other provider', async () => {
    await hiddenFault(ask, { fault: 'reset' });
  });

  it('no response within the first-byte timeout is retried on the other provider', async () => {
    const ms = await hiddenFault(ask, { fault: 'no-response' });
    expect(ms).toBeGreaterThanOrEqual(700);
  });

  it('a 429 is retried after its Retry-After', async () => {
    const ms = await hiddenFault(ask, { fault: '429', 'retry-after': 1 });
    expect(ms).toBeGreaterThanOrEqual(900);
  });
});

describe('status answers are not hammered', () => {
  it('a 503 from the only provider of a group is asked again only after its Retry-After (passthrough)', async () => {
    await queueFault(simB, { fault: '503', count: 1 });
    const before = (await simRequests(simB)).length;
    const started = Date.now();
    const { data, response } = await openai.chat.completions
      .create({ model: 'only-b', messages: [{ role: 'user', content: 'hi' }] })
      .withResponse();
    expect(data.choices[0]!.finish_reason).toBe('stop');
    expect(response.headers.get('x-iop-agent-id')).toBe('agent-b');
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000); // the sim's Retry-After: 1
    expect((await simRequests(simB)).slice(before).map((record) => record.status)).toEqual([503, 200]);
  });

  it('a 503 that persists on the only provider: asked once per gate attempt, each after Retry-After, then a 529 overloaded_error for Anthropic', async () => {
    await queueFault(simB, { fault: '503', count: 5 });
    const before = (await simRequests(simB)).length;
    const started = Date.now();
    const error = await anthropic.messages
      .create({ model: 'only-b', max_tokens: 32, messages: [{ role: 'user', content: 'hi' }] })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(Anthropic.APIError);
    expect((error as InstanceType<typeof Anthropic.APIError>).status).toBe(529);
    expect((error as Error).message).toContain('(after 3 attempts)');
    expect(Date.now() - started).toBeGreaterThanOrEqual(2000);
    expect((await simRequests(simB)).length).toBe(before + 3);
  });
});

describe('context length', () => {
  const longPrompt = 'word '.repeat(200);

  it.each([
    [
      'passthrough',
      async () =>
        openai.chat.completions
          .create({ model: 'story-small', messages: [{ role: 'user', content: longPrompt }], max_tokens: 8 })
          .withResponse(),
    ],
    [
      'normalized',
      async () =>
        anthropic.messages
          .create({ model: 'story-small', max_tokens: 8, messages: [{ role: 'user', content: longPrompt }] })
          .withResponse(),
    ],
  ])('an overflow goes to the contextFallback group (%s), never again to the same model', async (_name, ask) => {
    const before = [...(await simRequests(simA)), ...(await simRequests(simB))].length;
    const { data, response } = await ask();
    expect(response.headers.get('x-iop-model')).toBe('sim-model');
    expect((data as { model: string }).model).toBe('story-small');
    // Sim A's records (the only one serving the small model) come first, so a tie keeps its order.
    const records = [...(await simRequests(simA)), ...(await simRequests(simB))];
    expect(records.length).toBe(before + 2);
    const models = records
      .sort((x, y) => Number(x.receivedAt) - Number(y.receivedAt))
      .slice(-2)
      .map((record) => [record.model, record.status]);
    expect(models).toEqual([
      [SMALL, 400],
      ['sim-model', 200],
    ]);
  });

  it('without a fallback the 400 context_length_exceeded comes back, asked once', async () => {
    const before = (await simRequests(simA)).filter((record) => record.model === SMALL).length;
    const error = await openai.chat.completions
      .create({ model: 'tiny', messages: [{ role: 'user', content: longPrompt }], max_tokens: 8 })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as InstanceType<typeof OpenAI.BadRequestError>).code).toBe('context_length_exceeded');
    expect((await simRequests(simA)).filter((record) => record.model === SMALL).length).toBe(before + 1);
  });
});

describe('model groups and aliases', () => {
  it('an alias is served by its group; the answer names the alias, x-iop-model the served model (passthrough)', async () => {
    const { data, response } = await openai.chat.completions
      .create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] })
      .withResponse();
    expect(data.model).toBe('gpt-4o-mini');
    expect(response.headers.get('x-iop-model')).toBe('sim-model');
    const stream = await openai.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
    });
    const models = new Set<string>();
    for await (const chunk of stream) models.add(chunk.model);
    expect([...models]).toEqual(['gpt-4o-mini']);
  });

  it('an alias on the normalized path names the alias too', async () => {
    const { data, response } = await anthropic.messages
      .create({ model: 'claude-house-model', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] })
      .withResponse();
    expect(data.model).toBe('claude-house-model');
    expect(response.headers.get('x-iop-model')).toBe('sim-model');
  });
});
