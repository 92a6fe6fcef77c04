/**
 * The main job end to end: the official `openai` client → edge → gRPC tunnel → agent → sim, all
 * real processes on loopback.
 */
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
  type Proc,
  type SimHandle,
} from './harness';

let sim: SimHandle;
let edge: EdgeHandle;
let client: OpenAI;
let agent: Proc;

beforeAll(async () => {
  sim = await startSim(['--models', 'sim-model', '--output-tokens', '12']);
  edge = await startEdge();
  agent = await startAgent({
    tunnelPort: edge.tunnelPort,
    id: 'agent-a',
    backendUrl: sim.url,
    models: ['sim-model', 'sim-model@itl-ms=100', 'sim-model@tool-calls=3', 'sim-model@framing=crlf-split'],
  });
  client = new OpenAI({ apiKey: API_KEY, baseURL: edge.baseURL, maxRetries: 0 });
});

afterAll(stopAll);

const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Tell me a story about a cat.' }];

describe('POST /v1/chat/completions', () => {
  it('answers a non-stream request with the backend completion and usage', async () => {
    const completion = await client.chat.completions.create({ model: 'sim-model', messages });
    expect(completion.object).toBe('chat.completion');
    expect(completion.model).toBe('sim-model');
    expect(completion.choices[0]!.message.role).toBe('assistant');
    expect(completion.choices[0]!.finish_reason).toBe('stop');
    expect(completion.choices[0]!.message.content!.trim().split(/\s+/).length).toBeGreaterThan(3);
    expect(completion.usage!.completion_tokens).toBe(12);
    expect(completion.usage!.total_tokens).toBe(completion.usage!.prompt_tokens + 12);
  });

  it('streams content that accumulates to the whole answer, with usage when include_usage is set', async () => {
    const stream = await client.chat.completions.create({
      model: 'sim-model',
      messages,
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let chunks = 0;
    let usage: OpenAI.CompletionUsage | undefined | null;
    let finish: string | null = null;
    for await (const chunk of stream) {
      chunks++;
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.usage) usage = chunk.usage;
    }
    expect(chunks).toBeGreaterThan(12);
    expect(finish).toBe('stop');
    expect(text.trim().length).toBeGreaterThan(10);
    expect(usage?.completion_tokens).toBe(12);
  });

  it('sends no usage chunk when include_usage is not set', async () => {
    const stream = await client.chat.completions.create({ model: 'sim-model', messages, stream: true });
    const usages: unknown[] = [];
    for await (const chunk of stream) if (chunk.usage) usages.push(chunk.usage);
    expect(usages).toEqual([]);
  });

  it('streams parallel tool calls, each with its own index and arguments intact', async () => {
    const tools: OpenAI.Chat.ChatCompletionTool[] = ['get_weather', 'get_time', 'get_news'].map((name) => ({
      type: 'function',
      function: {
        name,
        parameters: {
          type: 'object',
          properties: { city: { type: 'string' }, days: { type: 'integer' } },
          required: ['city', 'days'],
        },
      },
    }));
    const runner = client.chat.completions.stream({ model: 'sim-model@tool-calls=3', messages, tools });
    const fragments = new Map<number, number>();
    runner.on('chunk', (chunk) => {
      for (const call of chunk.choices[0]?.delta.tool_calls ?? [])
        fragments.set(call.index, (fragments.get(call.index) ?? 0) + 1);
    });
    const final = await runner.finalChatCompletion();
    const calls = final.choices[0]!.message.tool_calls!;
    expect(final.choices[0]!.finish_reason).toBe('tool_calls');
    expect(calls).toHaveLength(3);
    expect(new Set(calls.map((call) => call.id)).size).toBe(3);
    for (const call of calls) {
      if (call.type !== 'function') throw new Error('expected a function call');
      const args = JSON.parse(call.function.arguments) as { city: unknown; days: unknown };
      expect(typeof args.city).toBe('string');
      expect(Number.isInteger(args.days)).toBe(true);
    }
    expect([...fragments.keys()].sort()).toEqual([0, 1, 2]);
    for (const count of fragments.values()) expect(count).toBeGreaterThan(2);
  });

  it('relays upstream SSE events split across TCP reads and CRLF-framed, intact', async () => {
    const collect = async (openai: OpenAI, model: string) => {
      const stream = await openai.chat.completions.create({
        model,
        messages,
        stream: true,
        seed: 7,
        stream_options: { include_usage: true },
      });
      const deltas: string[] = [];
      let usage: OpenAI.CompletionUsage | null | undefined;
      for await (const chunk of stream) {
        const delta = chunk.choices[0]?.delta.content;
        if (delta) deltas.push(delta);
        if (chunk.usage) usage = chunk.usage;
      }
      return { deltas, usage };
    };
    const direct = await collect(
      new OpenAI({ apiKey: 'unused', baseURL: `${sim.url}/v1`, maxRetries: 0 }),
      'sim-model',
    );
    const raw = await fetch(`${edge.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sim-model@framing=crlf-split', messages, stream: true, seed: 7 }),
    });
    expect(await raw.text()).toMatch(/^data: \{.*\}\r\n\r\ndata: /);
    const relayed = await collect(client, 'sim-model@framing=crlf-split');
    expect(relayed.deltas).toEqual(direct.deltas);
    expect(relayed.deltas).toHaveLength(12);
    expect(relayed.usage).toEqual(direct.usage);
  });

  it('cancels the backend request within 1 s when the client aborts mid-stream', async () => {
    await fetch(`${sim.url}/_sim/requests`, { method: 'DELETE' });
    const controller = new AbortController();
    const stream = await client.chat.completions.create(
      { model: 'sim-model@itl-ms=100', messages, stream: true },
      { signal: controller.signal },
    );
    let received = 0;
    try {
      for await (const chunk of stream) {
        if (chunk.choices[0]?.delta.content) received++;
        if (received === 3) controller.abort();
      }
    } catch (error) {
      expect((error as Error).name).toMatch(/Abort/);
    }
    expect(received).toBe(3);
    const abortedAt = Date.now();
    await eventually(async () => (await simRequests(sim)).some((request) => request.aborted === true), 1_000, 20);
    expect(Date.now() - abortedAt).toBeLessThan(1_000);
  });

  it('cancels every backend request when many concurrent streams are aborted at once', async () => {
    await fetch(`${sim.url}/_sim/requests`, { method: 'DELETE' });
    const streams = 24;
    await Promise.all(
      Array.from({ length: streams }, async () => {
        const controller = new AbortController();
        const stream = await client.chat.completions.create(
          { model: 'sim-model@itl-ms=100', messages, stream: true },
          { signal: controller.signal },
        );
        try {
          for await (const chunk of stream) if (chunk.choices[0]?.delta.content) controller.abort();
        } catch {
          // aborted by us
        }
      }),
    );
    await eventually(
      async () => {
        const chats = (await simRequests(sim)).filter((request) => request.path === '/v1/chat/completions');
        return chats.length === streams && chats.every((request) => request.aborted === true);
      },
      1_500,
      25,
    );
    const stats = (await (await fetch(`${sim.url}/_sim/stats`)).json()) as { inFlight: number };
    expect(stats.inFlight).toBe(0);
  });

  it('lists the models connected agents serve', async () => {
    const models = await client.models.list();
    expect(models.data.map((model) => model.id)).toEqual(
      expect.arrayContaining(['sim-model', 'sim-model@tool-calls=3']),
    );
  });
});

describe('bad input gets an OpenAI error object and the edge keeps serving', () => {
  const post = (body: string | Buffer, headers: Record<string, string> = {}) =>
    fetch(`${edge.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json', ...headers },
      body,
    });

  it.each([
    ['malformed JSON', '{"model": "sim-model", "messages": [', 400, 'invalid_request_error'],
    ['missing model', JSON.stringify({ messages }), 400, 'invalid_request_error'],
    ['messages not an array', JSON.stringify({ model: 'sim-model', messages: 'hi' }), 400, 'invalid_request_error'],
    ['unknown model', JSON.stringify({ model: 'no-such-model', messages }), 404, 'invalid_request_error'],
  ])('%s', async (_name, body, status, type) => {
    const response = await post(body);
    expect(response.status).toBe(status);
    const json = (await response.json()) as { error: { message: string; type: string; code: string | null } };
    expect(json.error.type).toBe(type);
    expect(json.error.message.length).toBeGreaterThan(5);
    expect(json.error.message).not.toMatch(/at .*\.js:\d+/);
    if (status === 404) expect(json.error.code).toBe('model_not_found');
  });

  it('a body over the size limit is a 413', async () => {
    const response = await post(Buffer.alloc(33 * 1024 * 1024, 0x20));
    expect(response.status).toBe(413);
    const json = (await response.json()) as { error: { type: string } };
    expect(json.error.type).toBe('invalid_request_error');
  });

  it('a missing or wrong API key is a 401 the SDK raises as AuthenticationError', async () => {
    const wrong = new OpenAI({ apiKey: 'sk-wrong-key-0000', baseURL: edge.baseURL, maxRetries: 0 });
    await expect(wrong.chat.completions.create({ model: 'sim-model', messages })).rejects.toBeInstanceOf(
      OpenAI.AuthenticationError,
    );
    const response = await fetch(`${edge.baseURL}/chat/completions`, { method: 'POST', body: '{}' });
    expect(response.status).toBe(401);
  });

  it('another method on a known path is a 405 with Allow; an unknown path a 404', async () => {
    const get = await fetch(`${edge.baseURL}/chat/completions`, { headers: { authorization: `Bearer ${API_KEY}` } });
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
    expect(((await get.json()) as { error: { code: string } }).error.code).toBe('method_not_allowed');
    const unknown = await fetch(`${edge.baseURL}/chat/completion`, {
      method: 'POST',
      headers: { authorization: `Bearer ${API_KEY}` },
    });
    expect(unknown.status).toBe(404);
  });

  it('still serves after all of that', async () => {
    const completion = await client.chat.completions.create({ model: 'sim-model', messages });
    expect(completion.choices[0]!.finish_reason).toBe('stop');
  });
});

describe('request id', () => {
  it('travels to the agent and shows in its logs', async () => {
    const { response } = await client.chat.completions.create({ model: 'sim-model', messages }).withResponse();
    const requestId = response.headers.get('x-request-id');
    expect(requestId).toMatch(/^req_/);
    await eventually(() =>
      edge.proc.lines.some((line) => line.requestId === requestId && line.msg === 'request completed'),
    );
    await eventually(() => agent.lines.some((line) => line.requestId === requestId));
  });
});
