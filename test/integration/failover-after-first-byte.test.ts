/**
 * After the first byte a failure cannot be hidden: a stall (agent `--idle-timeout-ms`), a cut
 * stream, a malformed chunk, a missing `[DONE]` and an upstream error chunk must end the stream
 * promptly with a well-formed error in the client's dialect — never a truncated answer presented
 * as success — and the edge stays healthy. The tokens of such a stream are not counted as an
 * answer in `iop_tokens_total`.
 */
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import {
  API_KEY,
  metricSum,
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
let anthropic: Anthropic;

beforeAll(async () => {
  sim = await startSim(['--models', 'sim-model', '--output-tokens', '12', '--itl-ms', '2']);
  edge = await startEdge();
  await startAgent({
    tunnelPort: edge.tunnelPort,
    id: 'agent-a',
    backendUrl: sim.url,
    models: ['sim-model'],
    args: ['--idle-timeout-ms', '500'],
  });
  openai = new OpenAI({ apiKey: API_KEY, baseURL: edge.baseURL, maxRetries: 0 });
  anthropic = new Anthropic({ apiKey: API_KEY, baseURL: edge.url, maxRetries: 0 });
});

afterAll(stopAll);

async function queueFault(fault: string): Promise<void> {
  const response = await fetch(`${sim.url}/_sim/faults`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ fault, 'fault-after': 3, count: 1 }),
  });
  expect(response.status).toBe(200);
}

const answerTokens = () => metricSum(edge.url, 'iop_tokens_total', { kind: 'completion', attempt: 'answer' });

/** The edge still answers after the fault. */
async function healthy(): Promise<void> {
  expect((await fetch(`${edge.url}/healthz`)).status).toBe(200);
  const completion = await openai.chat.completions.create({
    model: 'sim-model',
    messages: [{ role: 'user', content: 'again' }],
  });
  expect(completion.choices[0]!.finish_reason).toBe('stop');
}

const FAULTS = ['stall', 'cut', 'malformed', 'no-done', 'error-chunk'];

describe.each(FAULTS)('mid-stream fault %s', (fault) => {
  it('ends an OpenAI Chat stream (passthrough) with an in-band error, no finish_reason', async () => {
    await queueFault(fault);
    const tokensBefore = await answerTokens();
    const stream = await openai.chat.completions.create({
      model: 'sim-model',
      messages: [{ role: 'user', content: 'hello' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let finish: string | null = null;
    const started = Date.now();
    const error = await (async () => {
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta.content ?? '';
        finish = chunk.choices[0]?.finish_reason ?? finish;
      }
    })().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect(finish).toBeNull();
    expect(text.length).toBeGreaterThan(0);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(await answerTokens()).toBe(tokensBefore);
    await healthy();
  });

  it('ends an Anthropic stream (through the gate) with an error event, no message_stop', async () => {
    await queueFault(fault);
    const events: string[] = [];
    const stream = anthropic.messages.stream({
      model: 'sim-model',
      max_tokens: 64,
      messages: [{ role: 'user', content: 'hello' }],
    });
    const error = await (async () => {
      for await (const event of stream) events.push(event.type);
    })().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(Anthropic.APIError);
    expect(events).not.toContain('message_stop');
    await healthy();
  });
});
