import type { StreamEvent } from '@iop/core';
import { AnthropicStreamEncoder, UNSIGNED_THINKING_SIGNATURE } from '../../src/anthropic-messages/stream-encode';
import { context, encodeAll, parseSse, sdkEvents, sdkFinalMessage } from './helpers';

const START: StreamEvent = { type: 'response-start', id: 'chatcmpl-1', model: 'qwen3', created: 1 };
const USAGE: StreamEvent = {
  type: 'usage',
  usage: { inputTokens: 120, outputTokens: 17, cachedInputTokens: 100, cacheWriteTokens: 5 },
};

function names(text: string): Array<string | undefined> {
  return parseSse(text).map((event) => event.event);
}

describe('AnthropicStreamEncoder grammar (docs/protocols.md "Messages stream")', () => {
  it('frames every event with an event: line whose name equals the JSON type', () => {
    const text = encodeAll([
      START,
      { type: 'text-delta', text: 'Hi' },
      { type: 'finish', reason: 'stop', raw: 'stop' },
      USAGE,
    ]);
    for (const frame of text.split('\n\n').filter((f) => f.length > 0))
      expect(frame).toMatch(/^event: [a-z_]+\ndata: /);
    for (const event of parseSse(text)) expect(event.data.type).toBe(event.event);
  });

  it('renders a text answer: message_start, ping, one text block, message_delta, message_stop', () => {
    const text = encodeAll([
      START,
      { type: 'text-delta', text: 'Hello' },
      { type: 'text-delta', text: ', world' },
      { type: 'finish', reason: 'stop', raw: 'stop' },
      USAGE,
    ]);
    const events = parseSse(text);
    expect(events.map((e) => e.event)).toEqual([
      'message_start',
      'ping',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    const message = events[0]!.data.message as Record<string, unknown>;
    expect(message.id).toMatch(/^msg_[A-Za-z0-9]{24}$/);
    expect(message).toMatchObject({
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet-4-5',
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: 0, output_tokens: 0 },
    });
    expect(events[2]!.data).toEqual({
      type: 'content_block_start',
      index: 0,
      content_block: { type: 'text', text: '' },
    });
    expect(events[4]!.data).toEqual({
      type: 'content_block_delta',
      index: 0,
      delta: { type: 'text_delta', text: ', world' },
    });
    expect(events[6]!.data).toEqual({
      type: 'message_delta',
      delta: { stop_reason: 'end_turn', stop_sequence: null },
      // input_tokens = 120 − 100 cached − 5 written (docs/protocols.md "Usage")
      usage: { output_tokens: 17, input_tokens: 15, cache_creation_input_tokens: 5, cache_read_input_tokens: 100 },
    });
  });

  it('opens a new block on every switch reasoning → text → tool → reasoning, indexes 0,1,2,3', () => {
    const text = encodeAll([
      START,
      { type: 'reasoning-delta', text: 'think' },
      { type: 'text-delta', text: 'say' },
      { type: 'tool-call-delta', index: 0, id: 'call_1', name: 'Read', argumentsDelta: '{"a":1}' },
      { type: 'reasoning-delta', text: 'more' },
      { type: 'finish', reason: 'tool_calls', raw: 'tool_calls' },
      USAGE,
    ]);
    const events = parseSse(text);
    const starts = events
      .filter((e) => e.event === 'content_block_start')
      .map((e) => [e.data.index, (e.data.content_block as { type: string }).type]);
    expect(starts).toEqual([
      [0, 'thinking'],
      [1, 'text'],
      [2, 'tool_use'],
      [3, 'thinking'],
    ]);
    // never interleaved: each start is preceded by the previous block's stop
    let open: unknown;
    for (const event of events) {
      if (event.event === 'content_block_start') {
        expect(open).toBeUndefined();
        open = event.data.index;
      } else if (event.event === 'content_block_stop') {
        expect(event.data.index).toBe(open);
        open = undefined;
      } else if (event.event === 'content_block_delta') {
        expect(event.data.index).toBe(open);
      }
    }
    // every thinking block ends with a signature_delta right before its stop
    const signatures = events.filter(
      (e) => (e.data.delta as { type?: string } | undefined)?.type === 'signature_delta',
    );
    expect(signatures.map((e) => e.data.index)).toEqual([0, 3]);
    expect(signatures[0]!.data.delta).toEqual({ type: 'signature_delta', signature: UNSIGNED_THINKING_SIGNATURE });
  });

  it('keeps the upstream signature of a thinking block', () => {
    const events = parseSse(
      encodeAll([
        START,
        { type: 'reasoning-delta', text: 'a' },
        { type: 'reasoning-delta', text: '', signature: 'sig-123' },
        { type: 'finish', reason: 'stop', raw: 'stop' },
      ]),
    );
    expect(
      events.find((e) => (e.data.delta as { type?: string } | undefined)?.type === 'signature_delta')!.data.delta,
    ).toEqual({
      type: 'signature_delta',
      signature: 'sig-123',
    });
  });

  it('streams tool arguments as input_json_delta fragments exactly as they arrive, never repeated', () => {
    const fragments = ['', '{"path":', ' "/tmp/', 'a.txt"', '}'];
    const text = encodeAll([
      START,
      { type: 'tool-call-delta', index: 0, id: 'call_abc', name: 'Read', argumentsDelta: fragments[0]! },
      ...fragments
        .slice(1)
        .map((argumentsDelta): StreamEvent => ({ type: 'tool-call-delta', index: 0, argumentsDelta })),
      { type: 'finish', reason: 'tool_calls', raw: 'tool_calls' },
      USAGE,
    ]);
    const events = parseSse(text);
    expect(events[2]!.data).toEqual({
      type: 'content_block_start',
      index: 0,
      content_block: { type: 'tool_use', id: 'call_abc', name: 'Read', input: {} },
    });
    const partials = events
      .filter((e) => e.event === 'content_block_delta')
      .map((e) => (e.data.delta as { partial_json: string }).partial_json);
    expect(partials).toEqual(['{"path":', ' "/tmp/', 'a.txt"', '}']);
    expect((events.at(-2)!.data.delta as { stop_reason: string }).stop_reason).toBe('tool_use');
  });

  it('buffers an interleaved parallel tool call until the open tool block closes', () => {
    const text = encodeAll([
      START,
      { type: 'tool-call-delta', index: 0, id: 'call_0', name: 'A', argumentsDelta: '{"x"' },
      { type: 'tool-call-delta', index: 1, id: 'call_1', name: 'B', argumentsDelta: '{"y"' },
      { type: 'tool-call-delta', index: 0, argumentsDelta: ':1}' },
      { type: 'tool-call-delta', index: 1, argumentsDelta: ':2}' },
      { type: 'tool-call-delta', index: 2, id: 'call_2', name: 'C', argumentsDelta: '' },
      { type: 'finish', reason: 'tool_calls', raw: 'tool_calls' },
      USAGE,
    ]);
    const blocks = parseSse(text)
      .filter((e) => e.event?.startsWith('content_block'))
      .map((e) => [e.event, e.data.index, e.data.content_block ?? e.data.delta ?? null]);
    expect(blocks).toEqual([
      ['content_block_start', 0, { type: 'tool_use', id: 'call_0', name: 'A', input: {} }],
      ['content_block_delta', 0, { type: 'input_json_delta', partial_json: '{"x"' }],
      ['content_block_delta', 0, { type: 'input_json_delta', partial_json: ':1}' }],
      ['content_block_stop', 0, null],
      ['content_block_start', 1, { type: 'tool_use', id: 'call_1', name: 'B', input: {} }],
      ['content_block_delta', 1, { type: 'input_json_delta', partial_json: '{"y":2}' }],
      ['content_block_stop', 1, null],
      ['content_block_start', 2, { type: 'tool_use', id: 'call_2', name: 'C', input: {} }],
      ['content_block_stop', 2, null],
    ]);
  });

  it('maps stop reasons: length, stop sequence, content filter, stop after tool calls', () => {
    const stopOf = (events: StreamEvent[]): unknown =>
      parseSse(encodeAll([START, { type: 'text-delta', text: 'x' }, ...events])).find(
        (e) => e.event === 'message_delta',
      )!.data.delta;
    expect(stopOf([{ type: 'finish', reason: 'length', raw: 'length' }])).toEqual({
      stop_reason: 'max_tokens',
      stop_sequence: null,
    });
    expect(stopOf([{ type: 'finish', reason: 'stop', raw: 'stop', stopSequence: 'END' }])).toEqual({
      stop_reason: 'stop_sequence',
      stop_sequence: 'END',
    });
    expect(stopOf([{ type: 'finish', reason: 'content_filter', raw: 'content_filter' }])).toEqual({
      stop_reason: 'refusal',
      stop_sequence: null,
    });
    expect(
      stopOf([
        { type: 'tool-call-delta', index: 0, id: 'c', name: 'T', argumentsDelta: '{}' },
        { type: 'finish', reason: 'stop', raw: 'stop' },
      ]),
    ).toEqual({ stop_reason: 'tool_use', stop_sequence: null });
  });

  it('holds message_delta until the usage that follows finish, and sends it on the first usage', () => {
    const encoder = new AnthropicStreamEncoder(context());
    encoder.push(START);
    encoder.push({ type: 'text-delta', text: 'x' });
    const atFinish = encoder.push({ type: 'finish', reason: 'stop', raw: 'stop' });
    expect(names(atFinish)).toEqual(['content_block_stop']);
    const atUsage = encoder.push(USAGE);
    expect(names(atUsage)).toEqual(['message_delta', 'message_stop']);
    expect(encoder.push(USAGE)).toBe('');
    expect(encoder.end()).toBe('');
  });

  it('finalizes in end() when no usage arrives, with output_tokens 0 and no input fields', () => {
    const encoder = new AnthropicStreamEncoder(context());
    encoder.push(START);
    encoder.push({ type: 'finish', reason: 'stop', raw: 'stop' });
    const events = parseSse(encoder.end());
    expect(events.map((e) => e.event)).toEqual(['message_delta', 'message_stop']);
    expect(events[0]!.data.usage).toEqual({ output_tokens: 0 });
  });

  it('renders an upstream error as one event: error and nothing after it', () => {
    const encoder = new AnthropicStreamEncoder(context());
    let text = encoder.push(START) + encoder.push({ type: 'text-delta', text: 'par' });
    text += encoder.push({ type: 'error', code: 'no_capacity', message: 'backend overloaded' });
    text += encoder.push({ type: 'text-delta', text: 'tial' }) + encoder.push(USAGE) + encoder.end();
    const events = parseSse(text);
    expect(events.map((e) => e.event)).toEqual([
      'message_start',
      'ping',
      'content_block_start',
      'content_block_delta',
      'error',
    ]);
    expect(events.at(-1)!.data).toEqual({
      type: 'error',
      error: { type: 'overloaded_error', message: 'backend overloaded' },
    });
  });

  it('renders a stream cut before its terminal event as an api_error, never a made-up stop', () => {
    const events = parseSse(encodeAll([START, { type: 'text-delta', text: 'cut' }]));
    expect(events.map((e) => e.event)).toEqual([
      'message_start',
      'ping',
      'content_block_start',
      'content_block_delta',
      'error',
    ]);
    expect((events.at(-1)!.data.error as { type: string }).type).toBe('api_error');
  });

  it('starts the message even when the first event is not response-start', () => {
    expect(
      names(
        encodeAll([
          { type: 'text-delta', text: 'x' },
          { type: 'finish', reason: 'stop', raw: 'stop' },
        ]),
      ),
    ).toEqual([
      'message_start',
      'ping',
      'content_block_start',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
  });
});

describe('AnthropicStreamEncoder output read by the official @anthropic-ai/sdk MessageStream', () => {
  it('accumulates thinking, text and parallel tool calls into the expected Message', async () => {
    const text = encodeAll([
      START,
      { type: 'reasoning-delta', text: 'The user wants ' },
      { type: 'reasoning-delta', text: 'two files.' },
      { type: 'text-delta', text: 'Reading both.' },
      { type: 'tool-call-delta', index: 0, id: 'call_0', name: 'Read', argumentsDelta: '{"file_path":' },
      { type: 'tool-call-delta', index: 1, id: 'call_1', name: 'Read', argumentsDelta: '{"file_path":"/b"}' },
      { type: 'tool-call-delta', index: 0, argumentsDelta: '"/a"}' },
      { type: 'tool-call-delta', index: 2, id: 'call_2', name: 'Ls', argumentsDelta: '' },
      { type: 'finish', reason: 'tool_calls', raw: 'tool_calls' },
      USAGE,
    ]);
    const message = await sdkFinalMessage(text);
    expect(message).toEqual({
      id: expect.stringMatching(/^msg_/),
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet-4-5',
      content: [
        { type: 'thinking', thinking: 'The user wants two files.', signature: UNSIGNED_THINKING_SIGNATURE },
        { type: 'text', text: 'Reading both.' },
        { type: 'tool_use', id: 'call_0', name: 'Read', input: { file_path: '/a' } },
        { type: 'tool_use', id: 'call_1', name: 'Read', input: { file_path: '/b' } },
        { type: 'tool_use', id: 'call_2', name: 'Ls', input: {} },
      ],
      stop_reason: 'tool_use',
      stop_sequence: null,
      usage: { input_tokens: 15, output_tokens: 17, cache_creation_input_tokens: 5, cache_read_input_tokens: 100 },
      parsed_output: null, // added by the SDK's accumulator
    });
  });

  it('makes the SDK throw an APIError of the right type on an in-band error', async () => {
    const text = encodeAll([
      START,
      { type: 'text-delta', text: 'x' },
      { type: 'error', code: 'timeout', message: 'stalled' },
    ]);
    await expect(sdkEvents(text)).rejects.toMatchObject({
      type: 'timeout_error',
      error: { error: { message: 'stalled' } },
    });
  });
});

describe('message_start usage and thinking display', () => {
  const answer: StreamEvent[] = [
    { type: 'text-delta', text: 'Hi' },
    { type: 'finish', reason: 'stop', raw: 'stop' },
    USAGE,
  ];
  const startUsage = (text: string) =>
    (parseSse(text)[0]!.data as { message: { usage: Record<string, number> } }).message.usage;

  it('takes the backend’s prompt count from response-start, net of cache', () => {
    const start: StreamEvent = {
      ...START,
      promptUsage: { inputTokens: 120, outputTokens: 0, cachedInputTokens: 100 },
    } as StreamEvent;
    expect(startUsage(encodeAll([start, ...answer]))).toEqual({
      input_tokens: 20,
      output_tokens: 0,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 100,
    });
  });

  it('falls back to the edge’s estimate when the backend gave no count at the start, and 0 without one', () => {
    expect(startUsage(encodeAll([START, ...answer], { ...context(), estimateInputTokens: () => 42 }))).toMatchObject({
      input_tokens: 42,
      output_tokens: 0,
    });
    expect(startUsage(encodeAll([START, ...answer]))).toMatchObject({ input_tokens: 0 });
  });

  it('display omitted: the thinking block has no thinking_delta but keeps its signature', () => {
    const events: StreamEvent[] = [START, { type: 'reasoning-delta', text: 'Let me think.' }, ...answer];
    const sse = parseSse(encodeAll(events, context({ reasoning: { enabled: true, display: 'omitted' } })));
    const deltas = sse
      .filter((event) => event.event === 'content_block_delta')
      .map((event) => (event.data as { delta: { type: string } }).delta.type);
    expect(deltas).toEqual(['signature_delta', 'text_delta']);
    expect(sse[2]!.data).toEqual({
      type: 'content_block_start',
      index: 0,
      content_block: { type: 'thinking', thinking: '', signature: '' },
    });
    expect(JSON.stringify(sse)).not.toContain('Let me think.');
    expect(JSON.stringify(sse)).toContain(UNSIGNED_THINKING_SIGNATURE);
  });
});
