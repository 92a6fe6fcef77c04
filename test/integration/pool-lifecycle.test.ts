/**
 * Agents come and go: traffic spreads over the agents serving a model, a killed agent's
 * replacement re-registers and serves, and agents reconnect by themselves after an edge restart.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
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

let sim: SimHandle;
afterEach(stopAll);

const ask = (client: OpenAI) =>
  client.chat.completions.create({ model: 'sim-model', messages: [{ role: 'user', content: 'hello' }] });

describe('provider pool', () => {
  let edge: EdgeHandle;
  let client: OpenAI;

  beforeEach(async () => {
    sim = await startSim(['--models', 'sim-model', '--output-tokens', '4', '--itl-ms', '5']);
    edge = await startEdge();
    client = new OpenAI({ apiKey: API_KEY, baseURL: edge.baseURL, maxRetries: 0 });
  });

  it('two agents serving one model both get traffic', async () => {
    await startAgent({ tunnelPort: edge.tunnelPort, id: 'agent-1', backendUrl: sim.url, models: ['sim-model'] });
    await startAgent({ tunnelPort: edge.tunnelPort, id: 'agent-2', backendUrl: sim.url, models: ['sim-model'] });
    // Distinct conversations: one repeated prompt would share a prefix-affinity key and, by design,
    // go to one agent until its bounded load spills over.
    const answered = await Promise.all(
      Array.from({ length: 24 }, (_, i) =>
        client.chat.completions
          .create({ model: 'sim-model', messages: [{ role: 'user', content: `hello number ${i}` }] })
          .withResponse(),
      ),
    );
    const perAgent = new Map<string, number>();
    for (const { response } of answered) {
      const agent = response.headers.get('x-iop-agent-id') ?? 'none';
      perAgent.set(agent, (perAgent.get(agent) ?? 0) + 1);
    }
    expect([...perAgent.keys()].sort()).toEqual(['agent-1', 'agent-2']);
    for (const count of perAgent.values()) expect(count).toBeGreaterThanOrEqual(3);
    expect((await simRequests(sim)).filter((request) => request.path === '/v1/chat/completions').length).toBe(24);
  });

  it('an agent killed and restarted re-registers and serves', async () => {
    const first = await startAgent({
      tunnelPort: edge.tunnelPort,
      id: 'agent-x',
      backendUrl: sim.url,
      models: ['sim-model'],
    });
    expect((await ask(client)).choices[0]!.finish_reason).toBe('stop');
    await first.kill('SIGKILL');
    await eventually(async () => {
      const response = await fetch(`${edge.baseURL}/models`, { headers: { authorization: `Bearer ${API_KEY}` } });
      return ((await response.json()) as { data: unknown[] }).data.length === 0;
    });
    // Restarting, not unknown: a retryable 503 with Retry-After (an SDK never retries a 404).
    const error = await ask(client).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect(error).toMatchObject({ status: 503, code: 'no_capacity' });
    expect((error as InstanceType<typeof OpenAI.APIError>).headers?.get('retry-after')).toBe('1');
    // The same through the stream gate (Anthropic Messages, Responses): one refusal, not retried
    // by the gate against a pool that has no provider, so no "(after N attempts)".
    const messages = await new Anthropic({ apiKey: API_KEY, baseURL: edge.url, maxRetries: 0 }).messages
      .create({ model: 'sim-model', max_tokens: 16, messages: [{ role: 'user', content: 'hello' }] })
      .catch((caught: unknown) => caught);
    expect(messages).toBeInstanceOf(Anthropic.APIError);
    expect(messages).toMatchObject({ status: 529, error: { type: 'error', error: { type: 'overloaded_error' } } });
    const responses = await client.responses
      .create({ model: 'sim-model', input: 'hello' })
      .catch((caught: unknown) => caught);
    expect(responses).toMatchObject({ status: 503, code: 'no_capacity' });
    for (const refused of [messages, responses]) expect((refused as Error).message).not.toContain('attempts)');
    await startAgent({ tunnelPort: edge.tunnelPort, id: 'agent-x', backendUrl: sim.url, models: ['sim-model'] });
    expect((await ask(client)).choices[0]!.finish_reason).toBe('stop');
  });

  it('a stream whose agent dies ends promptly with an in-band error, never a hang or a clean finish', async () => {
    const agent = await startAgent({
      tunnelPort: edge.tunnelPort,
      id: 'agent-dies',
      backendUrl: sim.url,
      models: ['sim-model@itl-ms=400'],
    });
    const stream = await client.chat.completions.create({
      model: 'sim-model@itl-ms=400',
      messages: [{ role: 'user', content: 'hello' }],
      stream: true,
      max_tokens: 200,
    });
    let deltas = 0;
    let finish: string | null = null;
    const started = Date.now();
    await expect(
      (async () => {
        for await (const chunk of stream) {
          if (chunk.choices[0]?.delta.content) deltas++;
          finish = chunk.choices[0]?.finish_reason ?? finish;
          if (deltas === 2) void agent.kill('SIGKILL');
        }
      })(),
    ).rejects.toBeInstanceOf(OpenAI.APIError);
    expect(finish).toBeNull();
    expect(Date.now() - started).toBeLessThan(5_000);
    expect((await fetch(`${edge.url}/healthz`)).status).toBe(200);
  });

  it('agents reconnect and serve after the edge restarts', async () => {
    const agent = await startAgent({
      tunnelPort: edge.tunnelPort,
      id: 'agent-r',
      backendUrl: sim.url,
      models: ['sim-model'],
    });
    expect((await ask(client)).choices[0]!.finish_reason).toBe('stop');
    const registeredBefore = agent.lines.filter((line) => line.msg === 'registered').length;
    await edge.proc.kill('SIGKILL');
    const restarted = await startEdge({ port: edge.port, tunnelPort: edge.tunnelPort });
    await eventually(() => agent.lines.filter((line) => line.msg === 'registered').length > registeredBefore, 20_000);
    const again = new OpenAI({ apiKey: API_KEY, baseURL: restarted.baseURL, maxRetries: 0 });
    expect((await ask(again)).choices[0]!.finish_reason).toBe('stop');
  });
});
