/**
 * Routing across agents: a conversation keeps going to the agent that holds its prefix (prefix
 * affinity, visible as `iop_prefix_affinity_hits_total`), on both output paths, while different
 * conversations spread over the pool.
 */
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { API_KEY, startAgent, startEdge, startSim, stopAll, type EdgeHandle } from './harness';

let edge: EdgeHandle;

beforeAll(async () => {
  const sim = await startSim(['--models', 'sim-model', '--output-tokens', '3']);
  edge = await startEdge();
  for (const id of ['agent-1', 'agent-2', 'agent-3'])
    await startAgent({ tunnelPort: edge.tunnelPort, id, backendUrl: sim.url, models: ['sim-model'] });
});

afterAll(stopAll);

async function hits(result: 'warm' | 'cold'): Promise<number> {
  const text = await (await fetch(`${edge.url}/metrics`)).text();
  const line = text
    .split('\n')
    .find((candidate) => candidate.startsWith(`iop_prefix_affinity_hits_total{group="sim-model",result="${result}"}`));
  return line === undefined ? 0 : Number(line.split(' ').pop());
}

it('sends every turn of a conversation to the same agent (passthrough), different conversations spread', async () => {
  const client = new OpenAI({ apiKey: API_KEY, baseURL: edge.baseURL, maxRetries: 0 });
  const warmBefore = await hits('warm');
  const system = 'You are a terse assistant for conversation one.';
  const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [
    { role: 'system', content: system },
    { role: 'user', content: 'first question' },
  ];
  const agents = new Set<string | null>();
  for (let turn = 0; turn < 6; turn++) {
    const { data, response } = await client.chat.completions.create({ model: 'sim-model', messages }).withResponse();
    agents.add(response.headers.get('x-iop-agent-id'));
    messages.push(
      { role: 'assistant', content: data.choices[0]!.message.content ?? '' },
      { role: 'user', content: `question ${turn + 2}` },
    );
  }
  expect(agents.size).toBe(1);
  expect((await hits('warm')) - warmBefore).toBe(5);

  const spread = new Set<string | null>();
  for (let conversation = 0; conversation < 24; conversation++) {
    const { response } = await client.chat.completions
      .create({
        model: 'sim-model',
        messages: [
          { role: 'system', content: `conversation ${conversation}` },
          { role: 'user', content: 'hi' },
        ],
      })
      .withResponse();
    spread.add(response.headers.get('x-iop-agent-id'));
  }
  expect(spread.size).toBeGreaterThanOrEqual(2);
});

it('keeps a conversation on one agent on the normalized path too', async () => {
  const client = new Anthropic({ apiKey: API_KEY, baseURL: edge.url, maxRetries: 0 });
  const agents = new Set<string | null>();
  const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'a question for conversation two' }];
  for (let turn = 0; turn < 4; turn++) {
    const { data, response } = await client.messages
      .create({ model: 'sim-model', max_tokens: 32, system: 'conversation two', messages })
      .withResponse();
    agents.add(response.headers.get('x-iop-agent-id'));
    messages.push({ role: 'assistant', content: data.content }, { role: 'user', content: `follow-up ${turn}` });
  }
  expect(agents.size).toBe(1);
});
