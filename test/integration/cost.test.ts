/**
 * Cost: the price table (`pricing.models`, USD per million tokens) applied where each request's
 * usage is settled. Real edges, agents and the sim (which reports cached prompt tokens, as vLLM
 * does with --enable-prompt-tokens-details), driven with the official SDKs:
 * - on the embedded default (SQLite, in-memory counters): the ledger's `cost_usd` per model equals
 *   the price table applied to the usage each client saw (a group's price, an alias's own price,
 *   a served model's price; cached tokens at the cached rate), and a money budget refuses the
 *   request after the one that spent it, in the client's dialect; a rotation keeps it (or changes
 *   it, given a body), a PATCH raises it;
 * - two edges sharing PostgreSQL and Redis: a money budget spent on one edge refuses on the
 *   other, and the shared ledger's total cost equals what the clients saw.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { sleep } from '@iop/core';
import { eventually, startAgent, startEdge, startSim, stopAll, type EdgeHandle } from './harness';
import {
  ADMIN_KEY,
  admin,
  describeWithSharedState,
  dropIsolation,
  isolation,
  startSharedEdges,
} from './shared-state-helpers';

interface Price {
  input: number;
  cachedInput?: number;
  output: number;
}

/** What the clients saw of one request: prompt tokens (cached ones included), cached, output. */
interface Seen {
  input: number;
  cached: number;
  output: number;
}

const PRICES: Record<string, Price> = {
  // The group's price (its other names follow it) ...
  'chat-small': { input: 50, output: 200 },
  // ... an alias with a price of its own ...
  'gpt-4o-mini': { input: 150, cachedInput: 75, output: 600 },
  // ... and the served model, for a client that names it directly.
  'sim-model': { input: 10, cachedInput: 1, output: 40 },
};

/** The price table applied to what a client saw, USD (the spec of ledger/pricing.ts, computed here independently). */
function costOf(price: Price, seen: Seen): number {
  return (
    ((seen.input - seen.cached) * price.input +
      seen.cached * (price.cachedInput ?? price.input) +
      seen.output * price.output) /
    1e6
  );
}

const prompt = (i: number) => `please tell me a short story about the number ${i}`;

/** One request in one of four client shapes; returns the usage that client saw. */
async function request(edge: EdgeHandle, key: string, model: string, shape: number, i: number): Promise<Seen> {
  const openai = new OpenAI({ apiKey: key, baseURL: edge.baseURL, maxRetries: 0 });
  const messages = [{ role: 'user' as const, content: prompt(i) }];
  switch (shape % 4) {
    case 0: {
      const message = await new Anthropic({ apiKey: key, baseURL: edge.url, maxRetries: 0 }).messages.create({
        model,
        max_tokens: 32,
        messages,
      });
      // Anthropic's input_tokens exclude the cache reads (docs/protocols.md "Usage").
      const cached = message.usage.cache_read_input_tokens ?? 0;
      return {
        input: message.usage.input_tokens + cached + (message.usage.cache_creation_input_tokens ?? 0),
        cached,
        output: message.usage.output_tokens,
      };
    }
    case 1: {
      const stream = await openai.chat.completions.create({
        model,
        messages,
        stream: true,
        stream_options: { include_usage: true },
      });
      let seen: Seen | undefined;
      for await (const chunk of stream)
        if (chunk.usage)
          seen = {
            input: chunk.usage.prompt_tokens,
            cached: chunk.usage.prompt_tokens_details?.cached_tokens ?? 0,
            output: chunk.usage.completion_tokens,
          };
      return seen!;
    }
    case 2: {
      const answer = await openai.chat.completions.create({ model, messages });
      return {
        input: answer.usage!.prompt_tokens,
        cached: answer.usage!.prompt_tokens_details?.cached_tokens ?? 0,
        output: answer.usage!.completion_tokens,
      };
    }
    default: {
      const response = await openai.responses.create({ model, input: prompt(i), store: false });
      return {
        input: response.usage!.input_tokens,
        cached: response.usage!.input_tokens_details.cached_tokens,
        output: response.usage!.output_tokens,
      };
    }
  }
}

interface UsageRow {
  model?: string;
  requests: number;
  input_tokens: number;
  cached_tokens: number;
  output_tokens: number;
  cost_usd: number;
}

/** The ledger's rows for `key` once `requests` are written (every edge flushed first). */
async function ledger(edges: EdgeHandle[], key: string, requests: number, groupBy = ''): Promise<UsageRow[]> {
  await eventually(
    async () => {
      for (const edge of edges) await admin(edge.url, 'GET', '/admin/usage?flush=true');
      const total = await admin(edges[0]!.url, 'GET', `/admin/usage?key=${key}`);
      return (total.body.data as UsageRow[])[0]?.requests === requests;
    },
    10_000,
    100,
  ).catch(() => {});
  const rows = (
    await admin(edges.at(-1)!.url, 'GET', `/admin/usage?key=${key}${groupBy === '' ? '' : `&group_by=${groupBy}`}`)
  ).body.data as UsageRow[];
  return rows;
}

async function createKey(edge: EdgeHandle, policy: Record<string, unknown>): Promise<{ id: string; key: string }> {
  const created = await admin(edge.url, 'POST', '/admin/keys', policy);
  expect(created.status).toBe(201);
  return { id: created.body.id as string, key: created.body.key as string };
}

/**
 * A request after a money budget is spent: a 429 in the Anthropic dialect naming the budget and what it has spent
 * (`spent`, USD).
 */
async function expectBudgetRefusal(edge: EdgeHandle, key: string, name: string, spent: number): Promise<void> {
  const refused = await new Anthropic({ apiKey: key, baseURL: edge.url, maxRetries: 0 }).messages
    .create({ model: 'sim-model', max_tokens: 32, messages: [{ role: 'user', content: prompt(0) }] })
    .catch((error: unknown) => error);
  expect(refused).toBeInstanceOf(Anthropic.RateLimitError);
  const error = refused as InstanceType<typeof Anthropic.RateLimitError>;
  const body = (error.error as { error: { type: string; message: string } }).error;
  expect(body.type).toBe('rate_limit_error');
  const match = new RegExp(
    `^budget exhausted: key "${name}" has spent \\$([0-9.]+) of its \\$([0-9.]+) per-day budget$`,
  ).exec(body.message);
  expect(match).not.toBeNull();
  expect(Number(match![1])).toBeCloseTo(spent, 9);
  expect(Number(error.headers?.get('retry-after'))).toBeGreaterThanOrEqual(1);
}

describe('cost on the embedded default (SQLite)', () => {
  let edge: EdgeHandle;

  afterAll(stopAll);

  beforeAll(async () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'iop-cost-'));
    const configFile = path.join(dataDir, 'edge.json');
    writeFileSync(
      configFile,
      JSON.stringify({
        pool: { modelGroups: [{ name: 'chat-small', aliases: ['gpt-4o-mini'], targets: [{ model: 'sim-model' }] }] },
        pricing: { models: PRICES },
      }),
    );
    const sim = await startSim(['--models', 'sim-model', '--output-tokens', '10', '--cached-tokens', '4']);
    edge = await startEdge({
      args: ['--config', configFile, '--api-keys', ''],
      env: { IOP_DATA_DIR: dataDir, IOP_ADMIN_KEYS: ADMIN_KEY },
    });
    await startAgent({ tunnelPort: edge.tunnelPort, id: 'agent-cost', backendUrl: sim.url });
  }, 60_000);

  it("the ledger's cost per model equals the price table applied to the usage the clients saw", async () => {
    const { id, key } = await createKey(edge, { name: 'priced' });
    const models = ['chat-small', 'gpt-4o-mini', 'sim-model'];
    const expected = new Map(models.map((model) => [model, { requests: 0, cost: 0, cached: 0 }]));
    for (let i = 0; i < 12; i++) {
      const model = models[i % 3]!;
      const seen = await request(edge, key, model, i, i);
      expect(seen.cached).toBe(4); // the sim's cached tokens reach every client
      const sums = expected.get(model)!;
      sums.requests++;
      sums.cached += seen.cached;
      sums.cost += costOf(PRICES[model]!, seen);
    }
    const rows = await ledger([edge], id, 12, 'model');
    expect(rows.map((row) => row.model)).toEqual([...models].sort());
    for (const row of rows) {
      const sums = expected.get(row.model!)!;
      expect(row).toMatchObject({ requests: sums.requests, cached_tokens: sums.cached });
      expect(row.cost_usd).toBeGreaterThan(0);
      expect(row.cost_usd).toBeCloseTo(sums.cost, 12);
    }
    const [total] = await ledger([edge], id, 12);
    expect(total!.cost_usd).toBeCloseTo(
      [...expected.values()].reduce((sum, model) => sum + model.cost, 0),
      12,
    );
  }, 60_000);

  it('a money budget refuses the request after the one that spent it; a rotation keeps it (or changes it), a PATCH raises it', async () => {
    // The cost of one request, seen by a client (the sim's answers to one prompt are always the same size).
    const { key: probe } = await createKey(edge, { name: 'probe' });
    const one = costOf(PRICES['sim-model']!, await request(edge, probe, 'sim-model', 0, 0));
    const budget = Math.round(one * 1.5 * 1e9) / 1e9;
    const created = await admin(edge.url, 'POST', '/admin/keys', {
      name: 'money',
      budget: { maxCostUsd: budget, period: 'day' },
    });
    expect(created.status).toBe(201);
    expect(created.body.budget).toEqual({ maxCostUsd: budget, period: 'day' });
    const { id, key } = { id: created.body.id as string, key: created.body.key as string };
    // Spent 0 of 1.5 × one: admitted; then 1 × one, still below: admitted; then 2 × one: refused.
    await request(edge, key, 'sim-model', 0, 0);
    await sleep(300); // counted once the answer has ended, a moment after the client has it
    await request(edge, key, 'sim-model', 2, 0);
    await sleep(300);
    await expectBudgetRefusal(edge, key, 'money', 2 * one);
    await expect(request(edge, key, 'sim-model', 1, 0)).rejects.toMatchObject({ status: 429 });

    const rotated = await admin(edge.url, 'POST', `/admin/keys/${id}/rotate`);
    expect(rotated.body.budget).toEqual({ maxCostUsd: budget, period: 'day' });
    await expectBudgetRefusal(edge, rotated.body.key as string, 'money', 2 * one);
    const raised = await admin(edge.url, 'PATCH', `/admin/keys/${id}`, {
      budget: { maxCostUsd: budget * 10, period: 'day' },
    });
    expect(raised.status).toBe(200);
    await expect(request(edge, rotated.body.key as string, 'sim-model', 2, 0)).resolves.toMatchObject({ output: 10 });
    await sleep(300);
    // A rotation may change the policy with the secret: here a smaller budget, already spent.
    const tightened = await admin(edge.url, 'POST', `/admin/keys/${id}/rotate`, {
      budget: { maxCostUsd: budget, period: 'day' },
    });
    expect(tightened.status).toBe(200);
    expect(tightened.body.budget).toEqual({ maxCostUsd: budget, period: 'day' });
    await expectBudgetRefusal(edge, tightened.body.key as string, 'money', 3 * one);
    const badRotation = await admin(edge.url, 'POST', `/admin/keys/${id}/rotate`, {
      budget: { maxCostUsd: -1, period: 'day' },
    });
    expect(badRotation.status).toBe(400);
    const invalid = await admin(edge.url, 'POST', '/admin/keys', { name: 'no amount', budget: { period: 'day' } });
    expect(invalid.status).toBe(400);
  }, 60_000);
});

const isolated = isolation('cost');

describeWithSharedState('cost across two edges sharing PostgreSQL and Redis', () => {
  let edges: EdgeHandle[] = [];

  beforeAll(async () => {
    const sim = await startSim(['--models', 'sim-model', '--output-tokens', '10', '--cached-tokens', '3']);
    edges = await startSharedEdges(
      isolated,
      { id: 'agent-cost-shared', simUrl: sim.url },
      { IOP_PRICING_MODELS: JSON.stringify({ 'sim-model': PRICES['sim-model'] }) },
    );
  }, 60_000);

  afterAll(async () => {
    await stopAll();
    await dropIsolation(isolated);
  });

  it("a money budget spent on one edge refuses on the other; the shared ledger's cost equals what the clients saw", async () => {
    const { key: probe } = await createKey(edges[0]!, { name: 'probe' });
    const one = costOf(PRICES['sim-model']!, await request(edges[0]!, probe, 'sim-model', 2, 0));
    const { id, key } = await createKey(edges[0]!, {
      name: 'shared money',
      budget: { maxCostUsd: Math.round(one * 1.5 * 1e9) / 1e9, period: 'day' },
    });
    let cost = 0;
    cost += costOf(PRICES['sim-model']!, await request(edges[1]!, key, 'sim-model', 1, 0));
    await sleep(300);
    cost += costOf(PRICES['sim-model']!, await request(edges[0]!, key, 'sim-model', 2, 0));
    await sleep(300);
    await expectBudgetRefusal(edges[1]!, key, 'shared money', cost);
    await expectBudgetRefusal(edges[0]!, key, 'shared money', cost);

    const { id: ledgerId, key: ledgerKey } = await createKey(edges[1]!, { name: 'ledger' });
    let total = 0;
    await Promise.all(
      Array.from({ length: 8 }, async (_, i) => {
        const seen = await request(edges[i % 2]!, ledgerKey, 'sim-model', i, i);
        total += costOf(PRICES['sim-model']!, seen);
      }),
    );
    const [row] = await ledger(edges, ledgerId, 8);
    expect(row!.cached_tokens).toBe(8 * 3);
    expect(row!.cost_usd).toBeCloseTo(total, 12);
    // The refused requests cost nothing: the budget key's ledger holds the two answers' cost.
    const [spent] = await ledger(edges, id, 4);
    expect(spent!.cost_usd).toBeCloseTo(cost, 12);
  }, 60_000);
});
