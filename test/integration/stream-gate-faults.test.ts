/**
 * The commit boundary, end to end: a backend stream that breaks before anything reached the
 * client is retried transparently (the client gets one complete, normal answer); one that breaks
 * after text was streamed ends with the dialect's error event — never with a normal completion.
 * Faults are queued on the sim (`POST /_sim/faults`) for the next request only.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { API_KEY, startAgent, startEdge, startSim, stopAll, type EdgeHandle, type SimHandle } from './harness';
import { chatRequests, clearSim, metricSum, queueFault } from './stream-gate-helpers';

const OUTPUT_TOKENS = 12;

let sim: SimHandle;
let edge: EdgeHandle;
let openai: OpenAI;
let anthropic: Anthropic;

beforeAll(async () => {
  // 3 ms between tokens: text reaches the client before a mid-stream cut.
  sim = await startSim(['--models', 'sim-model', '--output-tokens', String(OUTPUT_TOKENS), '--itl-ms', '3']);
  edge = await startEdge({ env: { IOP_LOG_LEVEL: 'info' } });
  await startAgent({ tunnelPort: edge.tunnelPort, id: 'agent-faults', backendUrl: sim.url, models: ['sim-model'] });
  openai = new OpenAI({ apiKey: API_KEY, baseURL: edge.baseURL, maxRetries: 0 });
  anthropic = new Anthropic({ apiKey: API_KEY, baseURL: edge.url, maxRetries: 0 });
});

beforeEach(() => clearSim(sim));

afterAll(stopAll);

const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Tell me a story.' }];
/** Chat without tools would take the byte relay; the header puts it through the gate. */
const gated = (policy: string) => ({ headers: { 'x-iop-gate': `policy=${policy}` } });

/** The sim saw `count` requests, the first with `fault` and the last complete. */
async function expectBackendRequests(count: number, fault: string): Promise<void> {
  const records = await chatRequests(sim);
  expect(records).toHaveLength(count);
  expect(records[0]!.fault).toBe(fault);
  if (count > 1) expect(records.at(-1)).toMatchObject({ fault: null, completed: true });
}

describe('a stream cut before commit is retried transparently', () => {
  it('OpenAI Chat stream: cut right after the role chunk → one complete answer, 2 backend requests', async () => {
    const retriedBefore = await metricSum(edge, 'iop_gate_attempts_total', { outcome: 'retried' });
    await queueFault(sim, { fault: 'cut', 'fault-after': 0 });
    const stream = await openai.chat.completions.create(
      { model: 'sim-model', messages, stream: true, stream_options: { include_usage: true } },
      gated('evidence-tail'),
    );
    let text = '';
    let finish: string | null = null;
    let roles = 0;
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      if (chunk.choices[0]?.delta.role === 'assistant') roles++;
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.usage) usage = chunk.usage;
    }
    expect(finish).toBe('stop');
    expect(roles).toBe(1);
    expect(usage?.completion_tokens).toBe(OUTPUT_TOKENS);
    expect(text.trim().split(/\s+/).length).toBeGreaterThanOrEqual(4);
    await expectBackendRequests(2, 'cut');
    expect((await metricSum(edge, 'iop_gate_attempts_total', { outcome: 'retried' })) - retriedBefore).toBe(1);
  });

  it('Anthropic stream: connection reset before any header → one complete message', async () => {
    await queueFault(sim, { fault: 'reset' });
    const stream = anthropic.messages.stream({
      model: 'sim-model',
      max_tokens: 256,
      messages: [{ role: 'user', content: 'Tell me a story.' }],
    });
    let streamed = '';
    stream.on('text', (delta) => (streamed += delta));
    const final = await stream.finalMessage();
    expect(final.stop_reason).toBe('end_turn');
    expect(final.usage.output_tokens).toBe(OUTPUT_TOKENS);
    const [block] = final.content;
    expect(final.content).toHaveLength(1);
    expect(block?.type === 'text' && block.text).toBe(streamed);
    await expectBackendRequests(2, 'reset');
  });

  it('OpenAI Responses stream, buffered policy: a cut after 5 tokens is still before commit', async () => {
    await queueFault(sim, { fault: 'cut', 'fault-after': 5 });
    const deltas: string[] = [];
    const stream = openai.responses.stream(
      { model: 'sim-model', input: 'Tell me a story.', store: false },
      gated('buffered'),
    );
    stream.on('response.output_text.delta', (event) => deltas.push(event.delta));
    const final = await stream.finalResponse();
    expect(final.status).toBe('completed');
    expect(final.usage?.output_tokens).toBe(OUTPUT_TOKENS);
    expect(final.output_text).toBe(deltas.join(''));
    await expectBackendRequests(2, 'cut');
  });

  it('a non-stream client never sees a cut: Anthropic messages.create after a mid-answer cut', async () => {
    await queueFault(sim, { fault: 'cut', 'fault-after': 6 });
    const message = await anthropic.messages.create({
      model: 'sim-model',
      max_tokens: 256,
      messages: [{ role: 'user', content: 'Tell me a story.' }],
    });
    expect(message.stop_reason).toBe('end_turn');
    expect(message.usage.output_tokens).toBe(OUTPUT_TOKENS);
    await expectBackendRequests(2, 'cut');
  });
});

describe('a stream cut after commit ends with an error event, never a truncated success', () => {
  it('OpenAI Chat: text, then the SDK throws an APIError from the in-stream error; no finish_reason', async () => {
    await queueFault(sim, { fault: 'cut', 'fault-after': 6 });
    const stream = await openai.chat.completions.create(
      { model: 'sim-model', messages, stream: true },
      gated('evidence-tail'),
    );
    let text = '';
    const finishes: string[] = [];
    let thrown: unknown;
    try {
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta.content ?? '';
        if (chunk.choices[0]?.finish_reason) finishes.push(chunk.choices[0].finish_reason);
      }
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(OpenAI.APIError);
    expect((thrown as Error).message).toMatch(/upstream|stream/i);
    expect(text.length).toBeGreaterThan(0);
    expect(finishes).toEqual([]);
    await expectBackendRequests(1, 'cut');
  });

  it('Anthropic: text, then `event: error` makes the SDK throw; no message_stop', async () => {
    await queueFault(sim, { fault: 'cut', 'fault-after': 6 });
    const stream = await anthropic.messages.create({
      model: 'sim-model',
      max_tokens: 256,
      stream: true,
      messages: [{ role: 'user', content: 'Tell me a story.' }],
    });
    const types: string[] = [];
    let text = '';
    let thrown: unknown;
    try {
      for await (const event of stream) {
        types.push(event.type);
        if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') text += event.delta.text;
      }
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(Anthropic.APIError);
    expect(text.length).toBeGreaterThan(0);
    expect(types).toContain('message_start');
    expect(types).not.toContain('message_stop');
    expect(types).not.toContain('message_delta');
    await expectBackendRequests(1, 'cut');
  });

  it('OpenAI Responses: text, then response.failed (or an SDK error); never response.completed', async () => {
    await queueFault(sim, { fault: 'cut', 'fault-after': 6 });
    const stream = await openai.responses.create({
      model: 'sim-model',
      input: 'Tell me a story.',
      store: false,
      stream: true,
    });
    const types: string[] = [];
    let text = '';
    let failed: OpenAI.Responses.Response | undefined;
    let thrown: unknown;
    try {
      for await (const event of stream) {
        types.push(event.type);
        if (event.type === 'response.output_text.delta') text += event.delta;
        if (event.type === 'response.failed') failed = event.response;
      }
    } catch (error) {
      thrown = error;
    }
    expect(text.length).toBeGreaterThan(0);
    expect(types).not.toContain('response.completed');
    if (thrown === undefined) {
      expect(failed?.status).toBe('failed');
      expect(failed?.error?.message).toMatch(/upstream|stream/i);
    } else {
      expect(thrown).toBeInstanceOf(OpenAI.APIError);
    }
    expect(failed !== undefined || thrown !== undefined).toBe(true);
    await expectBackendRequests(1, 'cut');
  });
});
