/**
 * The output limit reached inside a tool call is the client's limit, not a model failure: one
 * attempt, `max_tokens` (Anthropic) / `length` (Chat) / `incomplete` (Responses) with what was
 * generated — never `tool_use` and never a 5xx after retrying under the same limit.
 */
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { API_KEY, startAgent, startEdge, startSim, stopAll, type EdgeHandle, type SimHandle } from './harness';
import { chatRequests, clearSim } from './stream-gate-helpers';

const MODEL = 'sim-model@tool-calls=1';
let sim: SimHandle;
let edge: EdgeHandle;
let openai: OpenAI;
let anthropic: Anthropic;

// Two output tokens: the call's start and 8 characters of its arguments (the sim's fragment), so
// the limit always falls inside the arguments, whatever values the sim draws.
const schema = {
  type: 'object' as const,
  properties: { city: { type: 'string' }, unit: { type: 'string' } },
  required: ['city'],
};

beforeAll(async () => {
  sim = await startSim(['--models', 'sim-model', '--ttft-ms', '50', '--itl-ms', '2']);
  edge = await startEdge();
  await startAgent({ tunnelPort: edge.tunnelPort, id: 'agent-limit', backendUrl: sim.url, models: [MODEL] });
  openai = new OpenAI({ apiKey: API_KEY, baseURL: edge.baseURL, maxRetries: 0 });
  anthropic = new Anthropic({ apiKey: API_KEY, baseURL: edge.url, maxRetries: 0 });
});

afterAll(stopAll);

describe('output limit inside a tool call', () => {
  it('Anthropic: stop_reason max_tokens after one attempt, stream and non-stream', async () => {
    await clearSim(sim);
    const params = {
      model: MODEL,
      max_tokens: 2,
      tools: [{ name: 'get_weather', input_schema: schema }],
      messages: [{ role: 'user' as const, content: 'Weather?' }],
    };
    const message = await anthropic.messages.create(params);
    expect(message.stop_reason).toBe('max_tokens');
    expect(message.content.some((block) => block.type === 'tool_use')).toBe(true);
    const streamed = await anthropic.messages.stream(params).finalMessage();
    expect(streamed.stop_reason).toBe('max_tokens');
    expect(await chatRequests(sim)).toHaveLength(2);
  });

  it('Chat: finish_reason length with the partial arguments, one attempt', async () => {
    await clearSim(sim);
    const completion = await openai.chat.completions.create({
      model: MODEL,
      max_tokens: 2,
      tools: [{ type: 'function', function: { name: 'get_weather', parameters: schema } }],
      messages: [{ role: 'user', content: 'Weather?' }],
    });
    expect(completion.choices[0]!.finish_reason).toBe('length');
    const call = completion.choices[0]!.message.tool_calls?.[0];
    expect(call?.type === 'function' ? call.function.name : undefined).toBe('get_weather');
    expect(await chatRequests(sim)).toHaveLength(1);
  });

  it('Responses: status incomplete (max_output_tokens), one attempt', async () => {
    await clearSim(sim);
    const response = await openai.responses.create({
      model: MODEL,
      max_output_tokens: 2,
      tools: [{ type: 'function', name: 'get_weather', parameters: schema, strict: false }],
      input: 'Weather?',
    });
    expect(response.status).toBe('incomplete');
    expect(response.incomplete_details?.reason).toBe('max_output_tokens');
    expect(await chatRequests(sim)).toHaveLength(1);
  });
});
