import OpenAI from 'openai';
import { startSim } from '../../src/index.js';
import type { SimStats } from '../../src/index.js';
import type { RequestRecord } from '../../src/request-log.js';
import {
  getJson,
  postRaw,
  requests,
  sseData,
  startFixture,
  USER_MESSAGES,
  waitFor,
  type Fixture,
} from './sim-fixture.js';

let fixture: Fixture;

beforeAll(async () => {
  fixture = await startFixture({ knobs: { outputTokens: 8 } });
});
afterAll(() => fixture.sim.close());
afterEach(async () => {
  await fetch(`${fixture.sim.url}/_sim/faults`, { method: 'DELETE' });
});

const streamBody = (model = 'sim-model') => ({ model, messages: USER_MESSAGES, stream: true });

/** Reads a streamed body until it ends, errors or goes quiet for `quietMs`. */
async function readStream(
  response: Response,
  quietMs = 1_000,
): Promise<{ text: string; outcome: 'end' | 'error' | 'quiet' }> {
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  for (;;) {
    let timer: NodeJS.Timeout | undefined;
    const quiet = new Promise<'quiet'>((resolve) => (timer = setTimeout(() => resolve('quiet'), quietMs)));
    try {
      const result = await Promise.race([reader.read(), quiet]);
      if (result === 'quiet') {
        await reader.cancel();
        return { text, outcome: 'quiet' };
      }
      if (result.done) return { text, outcome: 'end' };
      text += decoder.decode(result.value, { stream: true });
    } catch {
      return { text, outcome: 'error' };
    } finally {
      clearTimeout(timer);
    }
  }
}

function stats(): Promise<SimStats & { queuedFaults: number }> {
  return getJson(fixture.sim, '/_sim/stats');
}

async function lastRecord() {
  return (await requests(fixture.sim)).at(-1)!;
}

describe('status faults', () => {
  it.each([
    [429, OpenAI.RateLimitError],
    [500, OpenAI.InternalServerError],
    [503, OpenAI.InternalServerError],
  ])('fault=%i answers that status with Retry-After: 1 and a vLLM error body', async (status, errorClass) => {
    const response = await postRaw(
      fixture.sim,
      '/v1/chat/completions',
      { model: 'sim-model', messages: USER_MESSAGES },
      { 'x-sim-fault': String(status) },
    );
    expect(response.status).toBe(status);
    expect(response.headers.get('retry-after')).toBe('1');
    expect(JSON.parse(response.text).error.code).toBe(status);
    await expect(
      fixture.client.chat.completions.create({ model: `sim-model@fault=${status}`, messages: USER_MESSAGES }),
    ).rejects.toBeInstanceOf(errorClass);
  });

  it('omits Retry-After with retry-after=0', async () => {
    const response = await postRaw(fixture.sim, '/v1/chat/completions', {
      model: 'sim-model@fault=503,retry-after=0',
      messages: USER_MESSAGES,
    });
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toBeNull();
  });

  it('fault=context-length answers 400 with the vLLM message', async () => {
    const response = await postRaw(fixture.sim, '/v1/chat/completions', {
      model: 'sim-model@fault=context-length',
      messages: USER_MESSAGES,
      max_tokens: 100,
    });
    expect(response.status).toBe(400);
    expect(JSON.parse(response.text).error.message).toBe(
      "This model's maximum context length is 8192 tokens. However, you requested 108 tokens (8 in the messages, 100 in the completion). Please reduce the length of the messages or completion.",
    );
  });
});

describe('connection faults', () => {
  it('fault=reset destroys the socket before any header', async () => {
    await expect(postRaw(fixture.sim, '/v1/chat/completions', streamBody('sim-model@fault=reset'))).rejects.toThrow();
    const record = await lastRecord();
    expect(record).toMatchObject({ fault: 'reset', status: null, aborted: false, completed: false });
  });

  it('fault=no-response never answers, and the client leaving is recorded as an abort', async () => {
    const started = Date.now();
    await expect(
      fetch(`${fixture.sim.url}/v1/chat/completions`, {
        method: 'POST',
        body: JSON.stringify(streamBody('sim-model@fault=no-response')),
        signal: AbortSignal.timeout(300),
      }),
    ).rejects.toThrow();
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    await waitFor(async () => (await lastRecord()).aborted, 1_000);
    expect((await lastRecord()).status).toBeNull();
  });

  it('fault=slow-first-token delays the first token by slow-ttft-ms', async () => {
    const started = Date.now();
    const stream = await fixture.client.chat.completions.create({
      model: 'sim-model@fault=slow-first-token,slow-ttft-ms=300',
      messages: USER_MESSAGES,
      stream: true,
    });
    let firstAt = 0;
    for await (const chunk of stream)
      if (firstAt === 0 && chunk.choices[0]?.delta.content) firstAt = Date.now() - started;
    expect(firstAt).toBeGreaterThanOrEqual(295);
  });
});

describe('mid-stream faults', () => {
  it('fault=stall sends fault-after tokens then nothing, keeping the socket open', async () => {
    const response = await fetch(`${fixture.sim.url}/v1/chat/completions`, {
      method: 'POST',
      body: JSON.stringify(streamBody('sim-model@fault=stall,fault-after=3')),
    });
    const { text, outcome } = await readStream(response, 300);
    expect(outcome).toBe('quiet');
    expect(sseData(text)).toHaveLength(1 + 3);
    await waitFor(async () => (await lastRecord()).aborted, 1_000);
  });

  it('fault=cut destroys the socket after fault-after tokens', async () => {
    const response = await fetch(`${fixture.sim.url}/v1/chat/completions`, {
      method: 'POST',
      body: JSON.stringify(streamBody('sim-model@fault=cut,fault-after=2')),
    });
    const { text, outcome } = await readStream(response);
    expect(outcome).toBe('error');
    expect(sseData(text)).toHaveLength(1 + 2);
    await waitFor(async () => (await lastRecord()).completed === false && (await stats()).inFlight === 0, 1_000);
    expect((await lastRecord()).aborted).toBe(false);
  });

  it('fault=malformed puts one broken JSON chunk mid-stream and carries on to [DONE]', async () => {
    const response = await postRaw(
      fixture.sim,
      '/v1/chat/completions',
      streamBody('sim-model@fault=malformed,fault-after=2'),
    );
    const data = sseData(response.text);
    expect(data.at(-1)).toBe('[DONE]');
    const broken = data.filter((payload) => {
      try {
        JSON.parse(payload);
        return false;
      } catch {
        return payload !== '[DONE]';
      }
    });
    expect(broken).toHaveLength(1);
    expect(data.indexOf(broken[0]!)).toBe(3);
    await expect(
      (async () => {
        for await (const _chunk of await fixture.client.chat.completions.create({
          model: 'sim-model@fault=malformed',
          messages: USER_MESSAGES,
          stream: true,
        }));
      })(),
    ).rejects.toThrow(SyntaxError);
  });

  it('fault=no-done ends the body with neither finish_reason nor [DONE]', async () => {
    const response = await postRaw(
      fixture.sim,
      '/v1/chat/completions',
      streamBody('sim-model@fault=no-done,fault-after=4'),
    );
    const data = sseData(response.text);
    expect(data).toHaveLength(5);
    expect(data).not.toContain('[DONE]');
    expect(data.every((payload) => JSON.parse(payload).choices[0].finish_reason === null)).toBe(true);
    await expect(
      fixture.client.chat.completions
        .stream({ model: 'sim-model@fault=no-done', messages: USER_MESSAGES })
        .finalChatCompletion(),
    ).rejects.toThrow(/missing finish_reason/);
  });

  it('fault=error-chunk sends a vLLM in-stream error then [DONE]', async () => {
    const response = await postRaw(
      fixture.sim,
      '/v1/chat/completions',
      streamBody('sim-model@fault=error-chunk,fault-after=1'),
    );
    const data = sseData(response.text);
    expect(data).toHaveLength(4);
    expect(JSON.parse(data[2]!)).toEqual({
      error: { message: expect.any(String), type: 'InternalServerError', param: null, code: 500 },
    });
    expect(data[3]).toBe('[DONE]');
    await expect(
      (async () => {
        for await (const _chunk of await fixture.client.chat.completions.create({
          model: 'sim-model@fault=error-chunk',
          messages: USER_MESSAGES,
          stream: true,
        }));
      })(),
    ).rejects.toBeInstanceOf(OpenAI.APIError);
  });
});

describe('fault control', () => {
  it('queues a fault for the next count requests through POST /_sim/faults', async () => {
    const queued = await postRaw(fixture.sim, '/_sim/faults', { fault: '503', count: 2, 'retry-after': 0 });
    expect(JSON.parse(queued.text).queued).toMatchObject({ fault: '503', remaining: 2 });
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++)
      statuses.push(
        (await postRaw(fixture.sim, '/v1/chat/completions', { model: 'sim-model', messages: USER_MESSAGES })).status,
      );
    expect(statuses).toEqual([503, 503, 200]);
  });

  it('DELETE /_sim/faults clears the queue and bad bodies get a 400 naming the field', async () => {
    await postRaw(fixture.sim, '/_sim/faults', { fault: '500', count: 5 });
    expect((await stats()).queuedFaults).toBe(5);
    await fetch(`${fixture.sim.url}/_sim/faults`, { method: 'DELETE' });
    expect(
      (await postRaw(fixture.sim, '/v1/chat/completions', { model: 'sim-model', messages: USER_MESSAGES })).status,
    ).toBe(200);
    const bad = await postRaw(fixture.sim, '/_sim/faults', { fault: 'explode' });
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.text).error.param).toBe('fault');
  });

  it('applies a fault to a seeded share of requests with fault-rate', async () => {
    const pattern = async (): Promise<number[]> => {
      const sim = await startSim({ knobs: { fault: '500', faultRate: 0.5, seed: 3 } });
      try {
        const statuses: number[] = [];
        for (let i = 0; i < 40; i++)
          statuses.push(
            (await postRaw(sim, '/v1/chat/completions', { model: 'sim-model', messages: USER_MESSAGES })).status,
          );
        return statuses;
      } finally {
        await sim.close();
      }
    };
    const first = await pattern();
    const failures = first.filter((status) => status === 500).length;
    expect(failures).toBeGreaterThan(10);
    expect(failures).toBeLessThan(30);
    expect(await pattern()).toEqual(first);
  });
});

describe('abort detection and request log', () => {
  it('marks a stream the client closes as aborted within 1 s and stops generating', async () => {
    const controller = new AbortController();
    const stream = await fixture.client.chat.completions.create(
      { model: 'sim-model@itl-ms=20,output-tokens=1000', messages: USER_MESSAGES, stream: true },
      { signal: controller.signal },
    );
    let chunks = 0;
    for await (const _chunk of stream) if (++chunks === 3) break; // break aborts the request
    const abortedAt = Date.now();
    await waitFor(async () => (await lastRecord()).aborted, 1_000);
    const record = await lastRecord();
    expect(record.abortedAt! - abortedAt).toBeLessThan(1_000);
    expect(record.completed).toBe(false);
    expect((await stats()).inFlight).toBe(0);
    expect((await stats()).aborted).toBeGreaterThanOrEqual(1);
  });

  it('records headers (lower-cased), parsed body, model and completion, and DELETE clears', async () => {
    await fetch(`${fixture.sim.url}/_sim/requests`, { method: 'DELETE' });
    await postRaw(
      fixture.sim,
      '/v1/chat/completions',
      { model: 'sim-model@itl-ms=0', messages: USER_MESSAGES },
      { 'X-Trace-Id': 'abc' },
    );
    const [record, ...rest] = await requests(fixture.sim);
    expect(rest).toHaveLength(0);
    expect(record).toMatchObject({
      path: '/v1/chat/completions',
      model: 'sim-model@itl-ms=0',
      status: 200,
      completed: true,
      aborted: false,
      abortedAt: null,
    });
    expect(record!.headers['x-trace-id']).toBe('abc');
    expect(record!.body).toEqual({ model: 'sim-model@itl-ms=0', messages: USER_MESSAGES });
    expect(typeof record!.receivedAt).toBe('number');
  });

  it('a recorded body too deeply nested to serialize does not break the log: that body is replaced, the rest listed', async () => {
    await fetch(`${fixture.sim.url}/_sim/requests`, { method: 'DELETE' });
    const deep = `{"model":"sim-model","messages":[],"x":${'['.repeat(20_000)}${']'.repeat(20_000)}}`;
    await postRaw(fixture.sim, '/v1/chat/completions', deep);
    await postRaw(fixture.sim, '/v1/chat/completions', { model: 'sim-model@itl-ms=0', messages: USER_MESSAGES });
    const response = await fetch(`${fixture.sim.url}/_sim/requests`);
    expect(response.status).toBe(200);
    const records = ((await response.json()) as { data: RequestRecord[] }).data;
    expect(records).toHaveLength(2);
    expect(records[0]!.body).toEqual({ unserializable: expect.stringContaining('call stack') });
    expect(records[1]!.body).toEqual({ model: 'sim-model@itl-ms=0', messages: USER_MESSAGES });
  });

  it('keeps only the last request-log-size records', async () => {
    const sim = await startSim({ requestLogSize: 3 });
    try {
      for (let i = 0; i < 5; i++) await fetch(`${sim.url}/v1/models`);
      const records = await requests(sim);
      expect(records.map((record) => record.id)).toEqual([3, 4, 5]);
    } finally {
      await sim.close();
    }
  });
});
