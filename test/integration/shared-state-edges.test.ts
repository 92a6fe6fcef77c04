/**
 * Two edges sharing PostgreSQL and Redis, one agent connected to both (`--edge a,b`), driven with
 * the official SDKs: a Responses conversation alternating between the edges, a key's request and
 * token limits held across edges, a revocation on one edge seen by the other, and the usage
 * ledger's totals equal to the usage the clients saw.
 */
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { eventually, startSim, stopAll, type EdgeHandle } from './harness';
import {
  admin,
  describeWithSharedState,
  dropIsolation,
  startSharedEdges,
  freshMinute,
  isolation,
} from './shared-state-helpers';
import { sleep } from '@iop/core';

const isolated = isolation('edges');
let edges: EdgeHandle[] = [];

async function createKey(policy: Record<string, unknown>): Promise<{ id: string; key: string }> {
  const created = await admin(edges[0]!.url, 'POST', '/admin/keys', policy);
  expect(created.status).toBe(201);
  return { id: created.body.id as string, key: created.body.key as string };
}

const openai = (edge: EdgeHandle, key: string) => new OpenAI({ apiKey: key, baseURL: edge.baseURL, maxRetries: 0 });

describeWithSharedState('two edges sharing PostgreSQL and Redis', () => {
  beforeAll(async () => {
    const sim = await startSim(['--models', 'sim-model', '--output-tokens', '10']);
    edges = await startSharedEdges(isolated, { id: 'agent-shared', simUrl: sim.url });
  }, 60_000);

  afterAll(async () => {
    await stopAll();
    await dropIsolation(isolated);
  });

  it('a Responses conversation alternates between the edges', async () => {
    const { key } = await createKey({ name: 'conversation' });
    const [one, two] = [openai(edges[0]!, key), openai(edges[1]!, key)];
    const first = await one.responses.create({ model: 'sim-model', input: 'My name is Ada.' });
    const second = await two.responses.create({
      model: 'sim-model',
      input: 'What is my name?',
      previous_response_id: first.id,
    });
    const third = await one.responses.create({
      model: 'sim-model',
      input: 'And again?',
      previous_response_id: second.id,
    });
    expect(third.status).toBe('completed');
    // The history travelled: each turn's prompt holds every earlier turn.
    expect(second.usage!.input_tokens).toBeGreaterThan(first.usage!.input_tokens);
    expect(third.usage!.input_tokens).toBeGreaterThan(second.usage!.input_tokens);
    const fetched = await two.responses.retrieve(third.id);
    expect(fetched.id).toBe(third.id);
    expect(fetched.output_text).toBe(third.output_text);
    const items = await one.responses.inputItems.list(second.id);
    expect(items.data.length).toBeGreaterThanOrEqual(1);

    // Another key sees none of it, on either edge.
    const { key: otherKey } = await createKey({ name: 'someone else' });
    await expect(openai(edges[1]!, otherKey).responses.retrieve(first.id)).rejects.toMatchObject({ status: 404 });
    // Deleted on edge 1, gone on edge 2.
    await one.responses.delete(first.id);
    await expect(two.responses.retrieve(first.id)).rejects.toMatchObject({ status: 404 });
  }, 30_000);

  it("a key's request limit holds across edges, with rate-limit headers in each dialect", async () => {
    await freshMinute();
    const { key } = await createKey({ name: 'four a minute', limits: { requestsPerMinute: 4 } });
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) {
      const { response } = await openai(edges[i % 2]!, key)
        .chat.completions.create({ model: 'sim-model', messages: [{ role: 'user', content: 'hi' }] })
        .withResponse();
      statuses.push(response.status);
      expect(response.headers.get('x-ratelimit-limit-requests')).toBe('4');
      expect(response.headers.get('x-ratelimit-remaining-requests')).toBe(String(3 - i));
    }
    expect(statuses).toEqual([200, 200, 200, 200]);
    // The fifth, on either edge, is a 429 in the client's dialect with Retry-After.
    const refused = await openai(edges[0]!, key)
      .chat.completions.create({ model: 'sim-model', messages: [{ role: 'user', content: 'hi' }] })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(OpenAI.RateLimitError);
    const rateLimited = refused as InstanceType<typeof OpenAI.RateLimitError>;
    expect(rateLimited.code).toBe('rate_limit_exceeded');
    expect(Number(rateLimited.headers?.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(rateLimited.headers?.get('x-ratelimit-remaining-requests')).toBe('0');
    const anthropic = new Anthropic({ apiKey: key, baseURL: edges[1]!.url, maxRetries: 0 });
    const refusedAnthropic = await anthropic.messages
      .create({ model: 'sim-model', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] })
      .catch((error: unknown) => error);
    expect(refusedAnthropic).toBeInstanceOf(Anthropic.RateLimitError);
    const anthropicError = refusedAnthropic as InstanceType<typeof Anthropic.RateLimitError>;
    expect((anthropicError.error as { error: { type: string } }).error.type).toBe('rate_limit_error');
    expect(anthropicError.headers?.get('anthropic-ratelimit-requests-limit')).toBe('4');
    expect(anthropicError.headers?.get('anthropic-ratelimit-requests-remaining')).toBe('0');
    expect(anthropicError.headers?.get('anthropic-ratelimit-requests-reset')).toMatch(
      /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/,
    );
    expect(anthropicError.headers?.get('retry-after')).toMatch(/^\d+$/);
  }, 60_000);

  it("a key's token limit and budget count actual usage across edges", async () => {
    await freshMinute();
    const { key } = await createKey({ name: 'tokens', limits: { tokensPerMinute: 20 } });
    // Each answer is 10 output tokens plus the prompt: two requests (2 × 11) reach the limit of 20.
    const first = await openai(edges[0]!, key).chat.completions.create({
      model: 'sim-model',
      messages: [{ role: 'user', content: 'hi' }],
    });
    const used = first.usage!.total_tokens;
    expect(used).toBeGreaterThan(10);
    const { response } = await openai(edges[1]!, key)
      .chat.completions.create({ model: 'sim-model', messages: [{ role: 'user', content: 'hi' }] })
      .withResponse();
    expect(response.headers.get('x-ratelimit-limit-tokens')).toBe('20');
    expect(response.headers.get('x-ratelimit-remaining-tokens')).toBe(String(20 - used));
    // Tokens are counted once an answer has ended, a moment after the client has it.
    await sleep(200);
    await expect(
      openai(edges[0]!, key).chat.completions.create({
        model: 'sim-model',
        messages: [{ role: 'user', content: 'hi' }],
      }),
    ).rejects.toMatchObject({
      status: 429,
    });

    const { key: budgetKey } = await createKey({ name: 'small budget', budget: { maxTokens: 1, period: 'day' } });
    await openai(edges[1]!, budgetKey).chat.completions.create({
      model: 'sim-model',
      messages: [{ role: 'user', content: 'hi' }],
    });
    await sleep(200);
    const exhausted = await openai(edges[0]!, budgetKey)
      .chat.completions.create({ model: 'sim-model', messages: [{ role: 'user', content: 'hi' }] })
      .catch((error: unknown) => error);
    expect(exhausted).toMatchObject({ status: 429 });
    expect((exhausted as Error).message).toMatch(
      /budget exhausted: key "small budget" has used \d+ of its 1-token per-day budget/,
    );
  }, 60_000);

  it('a key revoked on one edge is refused by the other within seconds; a rotated key keeps its responses', async () => {
    const { id, key } = await createKey({ name: 'to revoke' });
    const client = openai(edges[1]!, key);
    await client.chat.completions.create({ model: 'sim-model', messages: [{ role: 'user', content: 'hi' }] });
    const revoked = await admin(edges[0]!.url, 'POST', `/admin/keys/${id}/revoke`);
    expect(revoked.body.revoked_at).toEqual(expect.any(String));
    const startedAt = Date.now();
    let status = 200;
    while (status === 200 && Date.now() - startedAt < 5_000) {
      status = await client.chat.completions
        .create({ model: 'sim-model', messages: [{ role: 'user', content: 'hi' }] })
        .then(
          () => 200,
          (error: { status: number }) => error.status,
        );
    }
    expect(status).toBe(401);
    expect(Date.now() - startedAt).toBeLessThan(5_000);

    const { id: rotateId, key: oldKey } = await createKey({ name: 'to rotate' });
    const stored = await openai(edges[0]!, oldKey).responses.create({ model: 'sim-model', input: 'remember me' });
    const rotated = await admin(edges[1]!.url, 'POST', `/admin/keys/${rotateId}/rotate`);
    const newKey = rotated.body.key as string;
    expect(newKey).not.toBe(oldKey);
    await expect(openai(edges[0]!, newKey).responses.retrieve(stored.id)).resolves.toMatchObject({ id: stored.id });
    await expect(openai(edges[1]!, oldKey).responses.retrieve(stored.id)).rejects.toMatchObject({ status: 401 });
    // The key list never shows a secret.
    const listed = await admin(edges[0]!.url, 'GET', '/admin/keys');
    expect(JSON.stringify(listed.body)).not.toContain(newKey);
    expect(JSON.stringify(listed.body)).not.toContain('key_hash');
  }, 30_000);

  it('a key may use only its allowed models (globs) and stops at its expiry', async () => {
    const { key } = await createKey({ name: 'sim only', models: ['sim-*'] });
    await expect(
      openai(edges[0]!, key).chat.completions.create({
        model: 'sim-model',
        messages: [{ role: 'user', content: 'hi' }],
      }),
    ).resolves.toMatchObject({
      object: 'chat.completion',
    });
    const { key: narrow } = await createKey({ name: 'other models', models: ['qwen3-*', 'gpt-?o'] });
    const refused = await openai(edges[1]!, narrow)
      .chat.completions.create({ model: 'sim-model', messages: [{ role: 'user', content: 'hi' }] })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect((refused as Error).message).toContain('this API key may not use the model "sim-model"');
    const { key: expired } = await createKey({ name: 'expired', expiresAt: new Date(Date.now() - 1000).toISOString() });
    const gone = await openai(edges[0]!, expired)
      .chat.completions.create({ model: 'sim-model', messages: [{ role: 'user', content: 'hi' }] })
      .catch((error: unknown) => error);
    expect(gone).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((gone as Error).message).toMatch(/this API key expired at \d{4}-/);
    const invalid = await admin(edges[0]!.url, 'POST', '/admin/keys', {
      name: 'bad',
      limits: { requestsPerMinute: 0 },
    });
    expect(invalid.status).toBe(400);
    expect(JSON.stringify(invalid.body)).toContain('/limits/requestsPerMinute must be >= 1');
  }, 30_000);

  it("the ledger's totals equal the usage the clients saw", async () => {
    const { id, key } = await createKey({ name: 'ledger' });
    let input = 0;
    let output = 0;
    const calls = Array.from({ length: 12 }, async (_, i) => {
      const edge = edges[i % 2]!;
      if (i % 3 === 0) {
        const message = await new Anthropic({ apiKey: key, baseURL: edge.url, maxRetries: 0 }).messages.create({
          model: 'sim-model',
          max_tokens: 32,
          messages: [{ role: 'user', content: `hello ${i}` }],
        });
        input += message.usage.input_tokens;
        output += message.usage.output_tokens;
      } else if (i % 3 === 1) {
        const stream = await openai(edge, key).chat.completions.create({
          model: 'sim-model',
          stream: true,
          stream_options: { include_usage: true },
          messages: [{ role: 'user', content: `hello ${i}` }],
        });
        for await (const chunk of stream) {
          if (chunk.usage) {
            input += chunk.usage.prompt_tokens;
            output += chunk.usage.completion_tokens;
          }
        }
      } else {
        const response = await openai(edge, key).responses.create({ model: 'sim-model', input: `hello ${i}` });
        input += response.usage!.input_tokens;
        output += response.usage!.output_tokens;
      }
    });
    await Promise.all(calls);
    // Each edge writes its own rows: flush both, then either edge reads the shared ledger.
    // Rows are queued as each request ends, a moment after its client has the answer.
    let total = { status: 0, body: {} as Record<string, unknown> };
    await eventually(
      async () => {
        await admin(edges[0]!.url, 'GET', '/admin/usage?flush=true');
        await admin(edges[1]!.url, 'GET', '/admin/usage?flush=true');
        total = await admin(edges[1]!.url, 'GET', `/admin/usage?key=${id}`);
        return (total.body.data as Array<{ requests: number }>)[0]?.requests === 12;
      },
      10_000,
      100,
    ).catch(() => {});
    expect(total.body.data).toEqual([
      {
        requests: 12,
        input_tokens: input,
        output_tokens: output,
        cached_tokens: 0,
        reasoning_tokens: 0,
        errors: 0,
        estimated_requests: 0,
        cost_usd: 0,
      },
    ]);
    const byDialect = await admin(
      edges[0]!.url,
      'GET',
      `/admin/usage?key=${id}&group_by=dialect,day&from=${new Date(Date.now() - 3_600_000).toISOString()}`,
    );
    const rows = byDialect.body.data as Array<{ dialect: string; day: string; requests: number }>;
    expect(rows.map((row) => [row.dialect, row.requests])).toEqual([
      ['anthropic-messages', 4],
      ['openai-chat', 4],
      ['openai-responses', 4],
    ]);
    expect(rows[0]!.day).toBe(new Date().toISOString().slice(0, 10));
    const byAgent = await admin(edges[0]!.url, 'GET', `/admin/usage?key=${id}&group_by=agent,model`);
    expect(byAgent.body.data).toMatchObject([{ agent: 'agent-shared', model: 'sim-model', requests: 12 }]);
    const bad = await admin(edges[0]!.url, 'GET', '/admin/usage?group_by=colour');
    expect(bad.status).toBe(400);
  }, 60_000);
});
