/**
 * Tool-call ids survive the round trip for backends that restrict their format (Mistral models on
 * vLLM want 9 alphanumeric characters): the edge rewrites the client's ids on the way in, the
 * backend sees only valid ids, and the client keeps its own.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { API_KEY, simRequests, startAgent, startEdge, startSim, stopAll, type SimHandle } from './harness';

let sim: SimHandle;
let client: Anthropic;

beforeAll(async () => {
  sim = await startSim(['--models', 'mistral-small', '--output-tokens', '6']);
  const config = path.join(mkdtempSync(path.join(tmpdir(), 'iop-tool-ids-')), 'edge.json');
  writeFileSync(
    config,
    JSON.stringify({
      pool: { modelGroups: [{ name: 'mistral-small', targets: [{ model: 'mistral-small', toolIdFormat: 'alnum9' }] }] },
    }),
  );
  const edge = await startEdge({ args: ['--config', config] });
  await startAgent({
    tunnelPort: edge.tunnelPort,
    id: 'agent-mistral',
    backendUrl: sim.url,
    models: ['mistral-small'],
  });
  client = new Anthropic({ apiKey: API_KEY, baseURL: edge.url, maxRetries: 0 });
});

afterAll(stopAll);

it('sends the backend 9-character alphanumeric ids and answers with the client’s own', async () => {
  const weather: Anthropic.Tool = {
    name: 'get_weather',
    input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  };
  const clientIds = ['toolu_01A09q90qw90lq917835lq9', 'toolu_01B-with_symbols'];
  const answer = await client.messages.create({
    model: 'mistral-small',
    max_tokens: 64,
    tools: [weather],
    messages: [
      { role: 'user', content: 'Weather in Paris and Rome?' },
      {
        role: 'assistant',
        content: clientIds.map((id, index) => ({
          type: 'tool_use' as const,
          id,
          name: 'get_weather',
          input: { city: index === 0 ? 'Paris' : 'Rome' },
        })),
      },
      {
        role: 'user',
        content: clientIds.map((id) => ({ type: 'tool_result' as const, tool_use_id: id, content: 'sunny' })),
      },
    ],
  });
  expect(answer.stop_reason).toBe('end_turn');
  const sent = (await simRequests(sim)).filter((request) => request.path === '/v1/chat/completions').at(-1)!.body as {
    messages: Array<{ role: string; tool_calls?: Array<{ id: string }>; tool_call_id?: string }>;
  };
  const backendIds = sent.messages.find((message) => message.role === 'assistant')!.tool_calls!.map((call) => call.id);
  expect(backendIds).toHaveLength(2);
  for (const id of backendIds) expect(id).toMatch(/^[A-Za-z0-9]{9}$/);
  expect(new Set(backendIds).size).toBe(2);
  expect(sent.messages.filter((message) => message.role === 'tool').map((message) => message.tool_call_id)).toEqual(
    backendIds,
  );

  const called = await client.messages.create({
    model: 'mistral-small',
    max_tokens: 64,
    tools: [weather],
    tool_choice: { type: 'any' },
    messages: [{ role: 'user', content: 'Weather?' }],
  });
  const use = called.content.find((block) => block.type === 'tool_use');
  expect(use?.type === 'tool_use' && use.id.length).toBeGreaterThan(0);
});
