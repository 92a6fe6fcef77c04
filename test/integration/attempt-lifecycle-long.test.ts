/**
 * The attempt lifecycle on answers longer than every short timeout, and on the normalized (stream
 * gate) path (docs/decisions/004-attempt-lifecycle.md): real edge, agent and sim processes, the
 * edge's run-accepted (1 s), first-byte (4 s) and write-stall (2 s) timeouts far below the answer
 * times. A 16 s non-stream generation succeeds with one backend attempt on the passthrough chat
 * path and through the gate (Anthropic Messages); a client that stops reading an Anthropic or
 * Responses stream has its backend request aborted and gets its dialect's in-band error. After
 * every scenario the edge's, the agent's, the agent's backend and the sim's in-flight counts are 0.
 */
import http from 'node:http';
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
import { ADMIN_KEY, inFlightCountsAgree } from './lifecycle-helpers';
import { clearSim } from './stream-gate-helpers';

jest.setTimeout(90_000);

const AGENT_ID = 'gpu-long';
const WRITE_STALL_MS = 2_000;
// The sim answers 20 tokens, the first after 1 s (below the 4 s first-byte timeout), unless a suffix says otherwise.
// 19 × 800 ms more: 16.2 s. A non-stream backend request sends nothing (headers included) before its last token.
const LONG_ANSWER = 'sim-model@itl-ms=800';
const ANSWER_MS = 1_000 + 19 * 800;
// ~50 MB of events as fast as they are read: more than every buffer between the edge and a client holds.
const FLOOD = 'sim-model@output-tokens=400000';

let sim: SimHandle;
let edge: EdgeHandle;
const chatRequests = async () => (await simRequests(sim)).filter((record) => record.path === '/v1/chat/completions');
const countsAgree = (expected: number, timeoutMs?: number) =>
  inFlightCountsAgree(edge.url, sim, AGENT_ID, expected, timeoutMs);

beforeAll(async () => {
  sim = await startSim([
    '--models',
    'sim-model',
    '--output-tokens',
    '20',
    '--ttft-ms',
    '1000',
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
      '4000',
      '--request-deadline-ms',
      '60000',
      '--write-stall-timeout-ms',
      String(WRITE_STALL_MS),
    ],
  });
  await startAgent({
    tunnelPort: edge.tunnelPort,
    id: AGENT_ID,
    backendUrl: sim.url,
    models: ['sim-model', LONG_ANSWER, FLOOD],
    args: ['--max-concurrency', '4'],
  });
});

beforeEach(() => clearSim(sim));

afterAll(stopAll);

describe('a non-stream generation longer than every short timeout', () => {
  it('16 s non-stream, passthrough chat and Anthropic Messages through the gate at once: each a 200 with the whole answer and usage after one backend attempt', async () => {
    const openai = new OpenAI({ apiKey: API_KEY, baseURL: edge.baseURL, maxRetries: 0 });
    const anthropic = new Anthropic({ apiKey: API_KEY, baseURL: edge.url, maxRetries: 0 });
    const startedAt = Date.now();
    const timed = <T>(promise: Promise<T>) => promise.then((value) => ({ value, ms: Date.now() - startedAt }));
    const chat = timed(
      openai.chat.completions.create({ model: LONG_ANSWER, messages: [{ role: 'user', content: 'hi' }] }),
    );
    const message = timed(
      anthropic.messages.create({ model: LONG_ANSWER, max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] }),
    );
    // Both runs open for the whole generation: every count sees both.
    await countsAgree(2);
    const [chatResult, messageResult] = await Promise.all([chat, message]);

    expect(chatResult.ms).toBeGreaterThanOrEqual(ANSWER_MS - 500);
    const completion = chatResult.value;
    expect(completion.choices[0]!.finish_reason).toBe('stop');
    expect(completion.choices[0]!.message.content!.trim().split(/\s+/)).toHaveLength(20);
    expect(completion.usage).toMatchObject({ completion_tokens: 20 });
    expect(completion.usage!.prompt_tokens).toBeGreaterThan(0);

    expect(messageResult.ms).toBeGreaterThanOrEqual(ANSWER_MS - 500);
    const answer = messageResult.value;
    expect(answer.stop_reason).toBe('end_turn');
    expect(answer.content).toHaveLength(1);
    const block = answer.content[0]!;
    expect(block.type).toBe('text');
    expect((block as Anthropic.TextBlock).text.trim().split(/\s+/)).toHaveLength(20);
    expect(answer.usage.output_tokens).toBe(20);
    expect(answer.usage.input_tokens).toBeGreaterThan(0);

    // One backend request each: the passthrough request non-stream, the gate's streamed; both generated in full.
    const chats = await chatRequests();
    expect(chats).toHaveLength(2);
    for (const record of chats) {
      expect(record).toMatchObject({
        status: 200,
        completed: true,
        aborted: false,
        fault: null,
        output: { completionTokens: 20 },
      });
      expect((record.completedAt as number) - (record.receivedAt as number)).toBeGreaterThanOrEqual(ANSWER_MS - 500);
    }
    expect(chats.map((record) => (record.body as { stream?: boolean }).stream === true).sort()).toEqual([false, true]);
    await countsAgree(0);
  });
});

/** A streamed request whose client reads the response headers and then nothing. */
async function stalledStream(
  path: string,
  headers: Record<string, string>,
  body: unknown,
): Promise<http.IncomingMessage> {
  const response = await new Promise<http.IncomingMessage>((resolve, reject) => {
    const request = http.request(
      `${edge.url}${path}`,
      { method: 'POST', headers: { 'content-type': 'application/json', ...headers } },
      resolve,
    );
    request.on('error', reject);
    request.end(JSON.stringify(body));
  });
  response.pause(); // never reads: the edge's socket fills
  return response;
}

interface Frame {
  event: string | undefined;
  data: Record<string, unknown>;
}

/**
 * Resumes reading a stalled response; resolves with its last SSE frames once it ended (a
 * Responses terminal event carries the whole response so far, so frames may be megabytes).
 */
async function readLastFrames(response: http.IncomingMessage, keep = 3): Promise<Frame[]> {
  let pending = '';
  const last: string[] = [];
  response.setEncoding('utf8');
  response.on('data', (text: string) => {
    const parts = (pending + text).split('\n\n');
    pending = parts.pop()!;
    for (const part of parts) if (part.trim() !== '') last.push(part);
    last.splice(0, Math.max(0, last.length - keep));
  });
  const ended = new Promise<boolean>((resolve) => {
    response.once('end', () => resolve(true));
    response.once('close', () => resolve(response.complete));
  });
  response.resume();
  expect(await ended).toBe(true); // the chunked body was terminated, not cut
  expect(pending.trim()).toBe(''); // and ends on a whole frame
  return last.map((frame) => {
    const lines = frame.split('\n');
    const event = lines.find((line) => line.startsWith('event: '))?.slice(7);
    const data = lines.find((line) => line.startsWith('data: '))!.slice(6);
    return { event, data: JSON.parse(data) as Record<string, unknown> };
  });
}

const STALL_MESSAGE = `the client read nothing for ${WRITE_STALL_MS} ms; the stream was ended`;

/** Waits for the stall to abort the backend request; the client then reads what the edge still sends. */
async function stallAndResume(response: http.IncomingMessage): Promise<Frame[]> {
  expect(response.statusCode).toBe(200);
  expect(response.headers['content-type']).toMatch(/^text\/event-stream/);
  await eventually(async () => (await chatRequests()).some((record) => record.aborted === true), 30_000, 100);
  const frames = await readLastFrames(response);
  const chats = await chatRequests();
  expect(chats).toHaveLength(1);
  expect(chats[0]).toMatchObject({ aborted: true, completed: false });
  // The edge gave up on the client (and logged the request's end) when the stall passed; the
  // backend request was aborted soon after (1 s is the aim; the margin is for a loaded machine).
  await edge.proc.waitFor((line) => line.msg === 'request completed' && line.aborted === true, 5_000);
  const ended = edge.proc.lines.filter((line) => line.msg === 'request completed').at(-1)!;
  // Its log line carries the in-band error's status (the write stall's `timeout`), as the ledger does.
  expect(ended).toMatchObject({ status: 504, aborted: true });
  expect((chats[0]!.abortedAt as number) - Date.parse(ended.time as string)).toBeLessThan(2_000);
  return frames;
}

describe('a client that stops reading a gate stream releases its backend slot', () => {
  it('Anthropic Messages: the backend request is aborted, the stream ends with `event: error` after the queued events', async () => {
    const response = await stalledStream(
      '/v1/messages',
      { 'x-api-key': API_KEY, 'anthropic-version': '2023-06-01' },
      { model: FLOOD, max_tokens: 400_000, stream: true, messages: [{ role: 'user', content: 'hi' }] },
    );
    const frames = await stallAndResume(response);
    const last = frames.at(-1)!;
    expect(last.event).toBe('error');
    expect(last.data).toEqual({ type: 'error', error: { type: expect.any(String), message: STALL_MESSAGE } });
    // What came before the error is the answer's text, not a message_stop.
    expect(frames.length).toBeGreaterThan(1);
    expect(frames.at(-2)!.event).toBe('content_block_delta');
    expect(frames.some((frame) => frame.event === 'message_stop')).toBe(false);
    await countsAgree(0);
  });

  it('OpenAI Responses: the backend request is aborted, the stream ends with `response.failed` after the queued events', async () => {
    const response = await stalledStream(
      '/v1/responses',
      { authorization: `Bearer ${API_KEY}` },
      { model: FLOOD, max_output_tokens: 400_000, stream: true, store: false, input: 'hi' },
    );
    const frames = await stallAndResume(response);
    const last = frames.at(-1)!;
    expect(last.event).toBe('response.failed');
    expect(last.data).toMatchObject({
      type: 'response.failed',
      response: { status: 'failed', error: { message: STALL_MESSAGE } },
    });
    expect(frames.some((frame) => frame.event === 'response.completed')).toBe(false);
    await countsAgree(0);
  });
});
