/**
 * Anthropic Messages on the edge, with the official @anthropic-ai/sdk, translated to the OpenAI
 * Chat backend (the sim behind a real agent) and back.
 */
import Anthropic from '@anthropic-ai/sdk';
import { API_KEY, startAgent, startEdge, startSim, stopAll, type EdgeHandle } from './harness';

let edge: EdgeHandle;
let client: Anthropic;

const MODELS = [
  'sim-model',
  'sim-model@reasoning=6',
  'sim-model@tool-calls=1',
  'sim-model@tool-calls=3',
  'sim-model@fault=403',
  'sim-model@fault=429',
  'sim-model@fault=500',
  'sim-model@fault=503',
];

beforeAll(async () => {
  const sim = await startSim(['--models', 'sim-model', '--output-tokens', '10', '--max-model-len', '65536']);
  edge = await startEdge();
  await startAgent({ tunnelPort: edge.tunnelPort, id: 'agent-anthropic', backendUrl: sim.url, models: MODELS });
  client = new Anthropic({ apiKey: API_KEY, baseURL: edge.url, maxRetries: 0 });
});

afterAll(stopAll);

const weather: Anthropic.Tool = {
  name: 'get_weather',
  description: 'Weather for a city',
  input_schema: {
    type: 'object',
    properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['c', 'f'] } },
    required: ['city', 'unit'],
  },
};
const time: Anthropic.Tool = {
  name: 'get_time',
  input_schema: { type: 'object', properties: { zone: { type: 'string' } }, required: ['zone'] },
};
const news: Anthropic.Tool = {
  name: 'get_news',
  input_schema: {
    type: 'object',
    properties: { topic: { type: 'string' }, limit: { type: 'integer' } },
    required: ['topic', 'limit'],
  },
};

describe('POST /v1/messages', () => {
  it('messages.create answers with a Message, end_turn and usage', async () => {
    const message = await client.messages.create({
      model: 'sim-model',
      max_tokens: 64,
      messages: [{ role: 'user', content: 'Hello there' }],
    });
    expect(message.type).toBe('message');
    expect(message.role).toBe('assistant');
    expect(message.id).toMatch(/^msg_/);
    expect(message.model).toBe('sim-model');
    expect(message.stop_reason).toBe('end_turn');
    expect(message.content).toHaveLength(1);
    expect(message.content[0]!.type).toBe('text');
    expect(message.usage.output_tokens).toBe(10);
    expect(message.usage.input_tokens).toBeGreaterThan(0);
  });

  it('max_tokens cuts the answer with stop_reason max_tokens', async () => {
    const message = await client.messages.create({
      model: 'sim-model',
      max_tokens: 4,
      messages: [{ role: 'user', content: 'Hello there' }],
    });
    expect(message.stop_reason).toBe('max_tokens');
    expect(message.usage.output_tokens).toBe(4);
  });

  it('messages.stream() streams text that finalMessage() assembles', async () => {
    const stream = client.messages.stream({
      model: 'sim-model',
      max_tokens: 64,
      messages: [{ role: 'user', content: 'Tell me a story' }],
    });
    let streamed = '';
    stream.on('text', (delta) => (streamed += delta));
    const final = await stream.finalMessage();
    const block = final.content[0];
    expect(block?.type).toBe('text');
    expect(block?.type === 'text' && block.text).toBe(streamed);
    expect(streamed.split(' ').length).toBeGreaterThanOrEqual(5);
    expect(final.stop_reason).toBe('end_turn');
    expect(final.usage.output_tokens).toBe(10);
  });

  it('streams thinking before text when thinking is enabled', async () => {
    const stream = client.messages.stream({
      model: 'sim-model@reasoning=6',
      max_tokens: 4096,
      thinking: { type: 'enabled', budget_tokens: 2048 },
      messages: [{ role: 'user', content: 'Think, then answer' }],
    });
    let thinking = '';
    stream.on('thinking', (delta) => (thinking += delta));
    const final = await stream.finalMessage();
    expect(final.content.map((block) => block.type)).toEqual(['thinking', 'text']);
    const block = final.content[0];
    expect(block?.type === 'thinking' && block.thinking).toBe(thinking);
    expect(thinking.length).toBeGreaterThan(0);
    expect(block?.type === 'thinking' && typeof block.signature).toBe('string');
  });

  it('streams one tool call with its input as an object', async () => {
    const final = await client.messages
      .stream({
        model: 'sim-model@tool-calls=1',
        max_tokens: 256,
        tools: [weather],
        messages: [{ role: 'user', content: 'Weather in Paris?' }],
      })
      .finalMessage();
    expect(final.stop_reason).toBe('tool_use');
    const uses = final.content.filter((block) => block.type === 'tool_use');
    expect(uses).toHaveLength(1);
    const use = uses[0]!;
    if (use.type !== 'tool_use') throw new Error('expected tool_use');
    expect(use.name).toBe('get_weather');
    expect(typeof (use.input as { city: unknown }).city).toBe('string');
    expect(['c', 'f']).toContain((use.input as { unit: unknown }).unit);
  });

  it('streams parallel tool calls as separate blocks in order', async () => {
    const stream = client.messages.stream({
      model: 'sim-model@tool-calls=3',
      max_tokens: 256,
      tools: [weather, time, news],
      messages: [{ role: 'user', content: 'All three please' }],
    });
    const indexes: number[] = [];
    stream.on('streamEvent', (event) => {
      if (event.type === 'content_block_start') indexes.push(event.index);
    });
    const final = await stream.finalMessage();
    expect(final.stop_reason).toBe('tool_use');
    const uses = final.content.filter((block) => block.type === 'tool_use');
    expect(uses).toHaveLength(3);
    expect(indexes).toEqual(final.content.map((_block, index) => index));
    expect(new Set(uses.map((use) => use.type === 'tool_use' && use.id)).size).toBe(3);
    for (const use of uses)
      if (use.type === 'tool_use') expect(Object.keys(use.input as object).length).toBeGreaterThan(0);
  });

  it('round-trips a tool call: tool_use, then tool_result, then the answer', async () => {
    const first = await client.messages.create({
      model: 'sim-model',
      max_tokens: 256,
      tools: [weather],
      tool_choice: { type: 'any' },
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
    });
    expect(first.stop_reason).toBe('tool_use');
    const use = first.content.find((block) => block.type === 'tool_use');
    if (use?.type !== 'tool_use') throw new Error('expected a tool_use block');
    const second = await client.messages.create({
      model: 'sim-model',
      max_tokens: 256,
      tools: [weather],
      messages: [
        { role: 'user', content: 'Weather in Paris?' },
        { role: 'assistant', content: first.content },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: use.id, content: '18 degrees and sunny' },
            { type: 'text', text: 'Summarize it.' },
          ],
        },
      ],
    });
    expect(second.stop_reason).toBe('end_turn');
    expect(second.content[0]!.type).toBe('text');
  });

  it('accepts a request shaped like Claude Code’s (?beta=true, system blocks, a system message, many tools, adaptive thinking)', async () => {
    const tools = Array.from({ length: 24 }, (_unused, index) => ({
      name: `Tool${index}`,
      description: 'x'.repeat(2000),
      input_schema: {
        $schema: 'https://json-schema.org/draft/2020-12/schema',
        type: 'object',
        properties: {
          path: { type: 'string', minLength: 1, pattern: '^/' },
          mode: { anyOf: [{ const: 'read' }, { const: 'write' }] },
          url: { type: 'string', format: 'uri' },
          limit: { type: 'integer', minimum: 1, maximum: 100, exclusiveMinimum: 0 },
          tags: { type: 'array', items: { type: 'string' }, maxItems: 5 },
          meta: { type: 'object', propertyNames: { pattern: '^[a-z]+$' }, additionalProperties: {} },
        },
        required: ['path'],
        additionalProperties: false,
      },
    }));
    const body = {
      model: 'sim-model',
      max_tokens: 32000,
      stream: true,
      thinking: { type: 'adaptive' },
      context_management: { edits: [] },
      output_config: { effort: 'medium' },
      metadata: { user_id: 'user_abc123' },
      system: [
        { type: 'text', text: 'You are Claude Code.', cache_control: { type: 'ephemeral' } },
        { type: 'text', text: 'Use the tools well.', cache_control: { type: 'ephemeral' } },
      ],
      tools,
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'List the files.' }] },
        { role: 'system', content: 'The user prefers short answers.' },
        { role: 'user', content: [{ type: 'text', text: 'Go.', cache_control: { type: 'ephemeral' } }] },
      ],
    };
    const response = await fetch(`${edge.url}/v1/messages?beta=true`, {
      method: 'POST',
      headers: {
        'x-api-key': API_KEY,
        'anthropic-version': '2023-06-01',
        'anthropic-beta': 'interleaved-thinking-2025-05-14,context-management-2025-06-27',
        'content-type': 'application/json',
      },
      body: JSON.stringify(body),
    });
    const text = await response.text();
    expect({ status: response.status, text: response.status === 200 ? 'ok' : text }).toEqual({
      status: 200,
      text: 'ok',
    });
    const events = [...text.matchAll(/^event: (\S+)$/gm)].map((match) => match[1]);
    expect(events[0]).toBe('message_start');
    expect(events.at(-1)).toBe('message_stop');
    expect(events).toContain('content_block_delta');
    for (const frame of text.split('\n\n').filter((part) => part.length > 0))
      expect(frame).toMatch(/^event: \S+\ndata: \{/);
  });

  it('count_tokens answers input_tokens and says whether it is exact', async () => {
    const counted = await client.messages.countTokens({
      model: 'sim-model',
      system: 'Be brief.',
      messages: [{ role: 'user', content: 'How many tokens is this?' }],
    });
    expect(counted.input_tokens).toBeGreaterThan(5);
    const response = await fetch(`${edge.url}/v1/messages/count_tokens`, {
      method: 'POST',
      headers: { 'x-api-key': API_KEY, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'sim-model', messages: [{ role: 'user', content: 'How many tokens is this?' }] }),
    });
    expect(response.headers.get('x-iop-token-count')).toBe('exact');
    expect(((await response.json()) as { input_tokens: number }).input_tokens).toBeGreaterThan(3);
  });
});

describe('errors surface as the SDK’s typed errors', () => {
  const ask = (model: string, extra: Partial<Anthropic.MessageCreateParamsNonStreaming> = {}, sdk = client) =>
    sdk.messages.create({ model, max_tokens: 32, messages: [{ role: 'user', content: 'hi' }], ...extra });

  const caught = async (promise: Promise<unknown>) => {
    try {
      await promise;
    } catch (error) {
      return error as InstanceType<typeof Anthropic.APIError>;
    }
    throw new Error('expected an error');
  };

  it('400 invalid_request_error', async () => {
    const error = await caught(ask('sim-model', { max_tokens: 'lots' as unknown as number }));
    expect(error).toBeInstanceOf(Anthropic.BadRequestError);
    expect((error.error as { error: { type: string } }).error.type).toBe('invalid_request_error');
  });

  it('401 authentication_error', async () => {
    const error = await caught(
      ask('sim-model', {}, new Anthropic({ apiKey: 'wrong-key-000', baseURL: edge.url, maxRetries: 0 })),
    );
    expect(error).toBeInstanceOf(Anthropic.AuthenticationError);
  });

  it('403 permission_error', async () => {
    const error = await caught(ask('sim-model@fault=403'));
    expect(error).toBeInstanceOf(Anthropic.PermissionDeniedError);
    expect((error.error as { error: { type: string } }).error.type).toBe('permission_error');
  });

  it('404 not_found_error', async () => {
    const error = await caught(ask('no-such-model'));
    expect(error).toBeInstanceOf(Anthropic.NotFoundError);
    expect((error.error as { error: { type: string } }).error.type).toBe('not_found_error');
  });

  it('413 request_too_large', async () => {
    const error = await caught(
      ask('sim-model', { messages: [{ role: 'user', content: 'x'.repeat(33 * 1024 * 1024) }] }),
    );
    expect(error.status).toBe(413);
    expect((error.error as { error: { type: string } }).error.type).toBe('request_too_large');
  });

  it('429 rate_limit_error with retry-after', async () => {
    const error = await caught(ask('sim-model@fault=429'));
    expect(error).toBeInstanceOf(Anthropic.RateLimitError);
    expect(error.headers?.get('retry-after')).toBe('1');
  });

  it('500 api_error', async () => {
    const error = await caught(ask('sim-model@fault=500'));
    expect(error).toBeInstanceOf(Anthropic.InternalServerError);
    expect(error.status).toBe(500);
    expect((error.error as { error: { type: string } }).error.type).toBe('api_error');
  });

  it('529 overloaded_error when the backend has no capacity', async () => {
    const error = await caught(ask('sim-model@fault=503'));
    expect(error).toBeInstanceOf(Anthropic.InternalServerError);
    expect(error.status).toBe(529);
    expect((error.error as { error: { type: string } }).error.type).toBe('overloaded_error');
  });
});
