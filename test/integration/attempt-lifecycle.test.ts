/**
 * The attempt lifecycle at compressed GPU timescales (docs/decisions/004-attempt-lifecycle.md):
 * real edge, agent and sim processes; the edge's heartbeat (500 ms), run-accepted (1 s),
 * first-byte (1.5 s), request-deadline (9 s) and write-stall (1 s) timeouts made short so each
 * failure shows in seconds. After every scenario the edge's count of open runs, the agent's
 * count of runs for this edge, the agent's open backend requests and the sim's open chat
 * requests all agree (`GET /admin/agents` `load.inFlight`, `load.agentInFlight`,
 * `load.backendInFlight`).
 */
import http from 'node:http';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import {
  API_KEY,
  eventually,
  metricSum,
  simRequests,
  startAgent,
  startEdge,
  startSim,
  stopAll,
  type EdgeHandle,
  type SimHandle,
} from './harness';
import { ADMIN_KEY, admin, inFlightCountsAgree } from './lifecycle-helpers';
import { clearSim, queueFault } from './stream-gate-helpers';

jest.setTimeout(60_000);

// The sim generates 20 tokens with no inter-token latency unless a model suffix says otherwise.
const SLOW_STREAM = 'sim-model@itl-ms=300'; // ~6 s of tokens
const LATE_ANSWER = 'sim-model@ttft-ms=4000'; // first token after 4 s: longer than every short timeout
const LONG_STREAM = 'sim-model@itl-ms=600'; // ~12 s: past the 9 s request deadline
const FLOOD = 'sim-model@output-tokens=400000'; // ~50 MB: more than every buffer on the way holds, as fast as it is read

let sim: SimHandle;
let edge: EdgeHandle;
let client: OpenAI;
const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [{ role: 'user', content: 'hi' }];

beforeAll(async () => {
  sim = await startSim([
    '--models',
    'sim-model',
    '--output-tokens',
    '20',
    '--itl-ms',
    '0',
    '--max-model-len',
    '1000000',
  ]);
  edge = await startEdge({
    args: [
      '--admin-keys',
      ADMIN_KEY,
      '--heartbeat-interval-ms',
      '500',
      '--run-accepted-timeout-ms',
      '1000',
      '--first-byte-timeout-ms',
      '1500',
      '--request-deadline-ms',
      '9000',
      '--write-stall-timeout-ms',
      '1000',
    ],
  });
  await startAgent({
    tunnelPort: edge.tunnelPort,
    id: 'gpu-1',
    backendUrl: sim.url,
    models: ['sim-model', SLOW_STREAM, LATE_ANSWER, LONG_STREAM, FLOOD],
    args: ['--max-concurrency', '4'],
  });
  client = new OpenAI({ apiKey: API_KEY, baseURL: edge.baseURL, maxRetries: 0 });
});

beforeEach(() => clearSim(sim));

afterAll(stopAll);

const countsAgree = (expected: number) => inFlightCountsAgree(edge.url, sim, 'gpu-1', expected);

describe('a saturated agent is busy, not gone', () => {
  it('every slot streaming for 6 s (12 heartbeat periods): all 4 streams complete, the agent stays connected, counts agree while busy', async () => {
    const streams = Array.from({ length: 4 }, async () => {
      const stream = await client.chat.completions.create({ model: SLOW_STREAM, messages, stream: true });
      let text = '';
      let finish: string | null = null;
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta.content ?? '';
        finish = chunk.choices[0]?.finish_reason ?? finish;
      }
      return { text, finish };
    });
    await countsAgree(4);
    const { body } = await admin(edge.url, 'GET', '/admin/agents');
    expect(body.data[0]!.health.status).toBe('ok');
    const results = await Promise.all(streams);
    for (const result of results) {
      expect(result.finish).toBe('stop');
      expect(result.text.length).toBeGreaterThan(0);
    }
    expect(edge.proc.lines.some((line) => line.msg === 'agent left')).toBe(false);
    await countsAgree(0);
  });
});

describe('a non-stream answer may take its whole deadline', () => {
  it('a 4 s non-stream completion (first byte = whole answer, longer than the 1 s accepted and 1.5 s first-byte timeouts) succeeds with one backend attempt', async () => {
    const startedAt = Date.now();
    const completion = await client.chat.completions.create({ model: LATE_ANSWER, messages });
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(3_900);
    expect(completion.choices[0]!.finish_reason).toBe('stop');
    const chats = (await simRequests(sim)).filter((record) => record.path === '/v1/chat/completions');
    expect(chats).toHaveLength(1);
    expect(chats[0]).toMatchObject({ status: 200, completed: true, aborted: false });
    await countsAgree(0);
  });
});

describe('every run the edge stops waiting for is aborted at the backend', () => {
  it('first-byte timeout on the only provider: a 504 after one attempt (not retried on it), the backend request aborted', async () => {
    const startedAt = Date.now();
    const error = await client.chat.completions.create({ model: LATE_ANSWER, messages, stream: true }).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(504);
    expect(Date.now() - startedAt).toBeLessThan(3_900); // answered before the backend's first token
    await eventually(async () => (await simRequests(sim)).some((record) => record.aborted === true), 3_000);
    const chats = (await simRequests(sim)).filter((record) => record.path === '/v1/chat/completions');
    expect(chats).toHaveLength(1);
    // Aborted within 1 s of the edge giving up (1.5 s first-byte timeout), not at the backend's answer.
    expect((chats[0]!.abortedAt as number) - (chats[0]!.receivedAt as number)).toBeLessThan(1_500 + 1_000 + 500);
    await countsAgree(0);
  });

  it('client disconnects mid-stream: the backend request is aborted and every count drops to 0', async () => {
    const controller = new AbortController();
    const stream = await client.chat.completions.create(
      { model: SLOW_STREAM, messages, stream: true },
      { signal: controller.signal },
    );
    let chunks = 0;
    try {
      for await (const _chunk of stream) if (++chunks === 2) controller.abort();
    } catch {
      // the SDK may end the iteration with an abort error
    }
    expect(chunks).toBe(2);
    await eventually(async () => (await simRequests(sim)).some((record) => record.aborted === true), 3_000);
    await countsAgree(0);
  });

  it('a client that leaves mid-stream or before its non-stream answer is counted 499 client_gone, never an upstream 502', async () => {
    const requestsWith = (status: number) =>
      metricSum(edge.url, 'iop_requests_total', { agent: 'gpu-1', status: String(status) });
    const [gone, upstream] = [await requestsWith(499), await requestsWith(502)];
    const streamAbort = new AbortController();
    const stream = await client.chat.completions.create(
      { model: SLOW_STREAM, messages, stream: true },
      { signal: streamAbort.signal },
    );
    try {
      for await (const _chunk of stream) streamAbort.abort();
    } catch {
      // the SDK ends the iteration with an abort error
    }
    // A non-stream request whose run is assigned and waiting on its backend (first token after 4 s).
    const answerAbort = new AbortController();
    const answer = client.chat.completions
      .create({ model: LATE_ANSWER, messages }, { signal: answerAbort.signal })
      .catch((error: unknown) => error);
    await eventually(
      async () => (await simRequests(sim)).filter((record) => String(record.path).includes('chat')).length >= 2,
      3_000,
    );
    answerAbort.abort();
    await answer;
    await eventually(async () => (await requestsWith(499)) === gone + 2, 5_000);
    expect(await requestsWith(502)).toBe(upstream);
    await countsAgree(0);
  });

  it('request deadline passes mid-stream: an in-band error ends the stream, the backend request is aborted', async () => {
    const stream = await client.chat.completions.create({ model: LONG_STREAM, messages, stream: true });
    let text = '';
    const ended = await (async () => {
      try {
        for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
        return undefined;
      } catch (error) {
        return error;
      }
    })();
    expect(text.length).toBeGreaterThan(0);
    expect(ended).toBeInstanceOf(OpenAI.APIError);
    expect(String((ended as Error).message)).toMatch(/deadline/);
    await eventually(async () => (await simRequests(sim)).some((record) => record.aborted === true), 3_000);
    await countsAgree(0);
  });

  it('request deadline passes mid-stream on the normalized path (Anthropic): an in-band error event, the backend request aborted', async () => {
    const anthropic = new Anthropic({ apiKey: API_KEY, baseURL: edge.url, maxRetries: 0 });
    const stream = anthropic.messages.stream({
      model: LONG_STREAM,
      max_tokens: 64,
      messages: [{ role: 'user', content: 'hi' }],
    });
    let text = '';
    stream.on('text', (delta) => (text += delta));
    const error = await stream.finalMessage().then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(text.length).toBeGreaterThan(0);
    expect(String((error as Error).message)).toMatch(/deadline/);
    await eventually(async () => (await simRequests(sim)).some((record) => record.aborted === true), 3_000);
    await countsAgree(0);
  });

  it('a client that stops reading: after the 1 s write stall the run is cancelled and its backend slot released', async () => {
    const body = JSON.stringify({ model: FLOOD, messages, stream: true });
    const response = await new Promise<http.IncomingMessage>((resolve, reject) => {
      const request = http.request(
        `${edge.url}/v1/chat/completions`,
        { method: 'POST', headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' } },
        resolve,
      );
      request.on('error', reject);
      request.end(body);
    });
    expect(response.statusCode).toBe(200);
    response.pause(); // never reads: the edge's socket fills
    await eventually(async () => (await simRequests(sim)).some((record) => record.aborted === true), 15_000, 100);
    // Reading again within the stall grace gets what the edge had queued, then its in-band error, then the end.
    let tail = '';
    response.setEncoding('utf8');
    response.on('data', (text: string) => (tail = (tail + text).slice(-4096)));
    response.resume();
    await new Promise((resolve) => response.once('close', resolve));
    expect(tail).toMatch(/"error":\{"message":"the client read nothing for 1000 ms; the stream was ended"/);
    await countsAgree(0);
  });
});

describe('retries never hammer', () => {
  it('two 429s without Retry-After on the only provider: retried after ≥ 250 ms, then ≥ 500 ms; the client gets a 200', async () => {
    await queueFault(sim, { fault: '429', count: 2, 'retry-after': 0 });
    const completion = await client.chat.completions.create({ model: 'sim-model', messages });
    expect(completion.choices[0]!.finish_reason).toBe('stop');
    const chats = (await simRequests(sim)).filter((record) => record.path === '/v1/chat/completions');
    expect(chats.map((record) => record.status)).toEqual([429, 429, 200]);
    const at = chats.map((record) => record.receivedAt as number);
    expect(at[1]! - at[0]!).toBeGreaterThanOrEqual(250);
    expect(at[2]! - at[1]!).toBeGreaterThanOrEqual(500);
    await countsAgree(0);
  });
});
