/**
 * The passthrough chat path holds the client to the same rules as the translated paths: the same
 * 400s before any backend call, `max_completion_tokens` over `max_tokens`, and a backend error
 * chunk mid-stream is an in-band error counted as a failed request (not relayed with `[DONE]` and
 * counted as a success); a malformed first chunk is a failed attempt, retried before the 200.
 */
import OpenAI from 'openai';
import {
  API_KEY,
  metricSum,
  simRequests,
  startAgent,
  startEdge,
  startSim,
  stopAll,
  type EdgeHandle,
  type SimHandle,
} from './harness';

let sim: SimHandle;
let edge: EdgeHandle;
let openai: OpenAI;

beforeAll(async () => {
  sim = await startSim(['--models', 'sim-model', '--output-tokens', '12', '--itl-ms', '2', '--ttft-ms', '100']);
  edge = await startEdge();
  await startAgent({ tunnelPort: edge.tunnelPort, id: 'agent-a', backendUrl: sim.url, models: ['sim-model'] });
  openai = new OpenAI({ apiKey: API_KEY, baseURL: edge.baseURL, maxRetries: 0 });
});

afterAll(stopAll);

const TOOL = {
  type: 'function' as const,
  function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
};

async function errorOf(body: Record<string, unknown>): Promise<{ status: number; error: Record<string, unknown> }> {
  const response = await fetch(`${edge.baseURL}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, error: ((await response.json()) as { error: Record<string, unknown> }).error };
}

const requestsCounted = (status: string) =>
  metricSum(edge.url, 'iop_requests_total', { dialect: 'openai-chat', status });

describe('passthrough chat completions', () => {
  it.each([
    ['an unknown role', { messages: [{ role: 'robot', content: 'hi' }] }],
    ['content of the wrong type', { messages: [{ role: 'user', content: 42 }] }],
    ['temperature out of range', { messages: [{ role: 'user', content: 'hi' }], temperature: 7 }],
    [
      'max_completion_tokens of the wrong type',
      { messages: [{ role: 'user', content: 'hi' }], max_completion_tokens: 'ten' },
    ],
  ])('rejects %s with the same 400 as the translated path, before any backend call', async (_what, fields) => {
    const before = (await simRequests(sim)).length;
    const relayed = await errorOf({ model: 'sim-model', ...fields });
    const translated = await errorOf({ model: 'sim-model', tools: [TOOL], ...fields });
    expect(relayed.status).toBe(400);
    expect(relayed).toEqual(translated);
    expect(relayed.error.type).toBe('invalid_request_error');
    expect(typeof relayed.error.param).toBe('string');
    expect((await simRequests(sim)).length).toBe(before);
  });

  it('max_completion_tokens wins over max_tokens, sent as max_tokens alone (the normalized path’s rule)', async () => {
    await fetch(`${sim.url}/_sim/requests`, { method: 'DELETE' });
    const completion = await openai.chat.completions.create({
      model: 'sim-model',
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 50,
      max_completion_tokens: 3,
    });
    expect(completion.usage?.completion_tokens).toBe(3);
    expect(completion.choices[0]!.finish_reason).toBe('length');
    const body = (await simRequests(sim)).at(-1)!.body as Record<string, unknown>;
    expect(body.max_tokens).toBe(3);
    expect(body).not.toHaveProperty('max_completion_tokens');
  });

  it('a backend error chunk mid-stream is an in-band error and a failed request in the metrics', async () => {
    // After 8 chunks, past the first body frame (an error chunk in that frame is a failed attempt, retried: below).
    const response = await fetch(`${sim.url}/_sim/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ fault: 'error-chunk', 'fault-after': 8, count: 1 }),
    });
    expect(response.status).toBe(200);
    const ok = await requestsCounted('200');
    const failed = await requestsCounted('500');
    const stream = await openai.chat.completions.create({
      model: 'sim-model',
      messages: [{ role: 'user', content: 'hello' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    const error = await (async () => {
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    })().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect(text.length).toBeGreaterThan(0);
    expect(await requestsCounted('500')).toBe(failed + 1);
    expect(await requestsCounted('200')).toBe(ok);
  });

  it('a malformed first chunk is a failed attempt, retried before the 200: the client gets the whole answer from the next one', async () => {
    await fetch(`${sim.url}/_sim/requests`, { method: 'DELETE' });
    const queued = await fetch(`${sim.url}/_sim/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ fault: 'malformed', 'fault-after': 0, count: 1 }),
    });
    expect(queued.status).toBe(200);
    const ok = await requestsCounted('200');
    const { data: stream, response } = await openai.chat.completions
      .create({
        model: 'sim-model',
        messages: [{ role: 'user', content: 'hello' }],
        stream: true,
        stream_options: { include_usage: true },
      })
      .withResponse();
    expect(response.status).toBe(200);
    let text = '';
    let usage: OpenAI.CompletionUsage | undefined;
    let finish: string | null | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
      usage = chunk.usage ?? usage;
    }
    expect(finish).toBe('stop');
    expect(usage?.completion_tokens).toBe(12);
    expect(text.length).toBeGreaterThan(0);
    // Two backend requests: the faulted one and its retry, both of this request.
    expect((await simRequests(sim)).length).toBe(2);
    expect(await requestsCounted('200')).toBe(ok + 1);
  });

  it('streams with include_usage end in exactly one choices:[] usage chunk the SDK iterates', async () => {
    const stream = await openai.chat.completions.create({
      model: 'sim-model',
      messages: [{ role: 'user', content: 'hello' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const usage: unknown[] = [];
    let last: OpenAI.ChatCompletionChunk | undefined;
    for await (const chunk of stream) {
      if (chunk.usage) usage.push(chunk.usage);
      last = chunk;
    }
    expect(usage).toHaveLength(1);
    expect(last?.choices).toEqual([]);
    expect(last?.usage?.completion_tokens).toBe(12);
  });

  it.each([
    ['data spread over several data: lines (sim framing multiline)', { framing: 'multiline' }],
    ['a finished answer without [DONE] (sim fault finish-no-done)', { fault: 'finish-no-done' }],
    ['both', { fault: 'finish-no-done', framing: 'multiline' }],
  ])('%s reaches the SDK as a complete, conformant stream', async (_what, knobs) => {
    const queued = await fetch(`${sim.url}/_sim/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ fault: 'none', count: 1, ...knobs }),
    });
    expect(queued.status).toBe(200);
    const stream = await openai.chat.completions.create({
      model: 'sim-model',
      messages: [{ role: 'user', content: 'hello' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let finish: string | null = null;
    const usage: Array<{ completion_tokens: number }> = [];
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.usage) usage.push(chunk.usage);
    }
    expect(finish).toBe('stop');
    expect(text.length).toBeGreaterThan(0);
    expect(usage).toHaveLength(1);
    expect(usage[0]!.completion_tokens).toBe(12);
  });
});
