import { splitAt } from '@iop/test-support';
/**
 * Recorded upstream chat streams (`test/fixtures/backend/*.sse`, one raw SSE event
 * per line) → the chat stream decoder → the Anthropic stream encoder → what the client receives,
 * checked event by event, through the official SDK, and under any split of the upstream bytes.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { createChatStreamDecoder } from '../../src/openai-chat/stream-decode';
import { AnthropicStreamEncoder, UNSIGNED_THINKING_SIGNATURE } from '../../src/anthropic-messages/stream-encode';
import { context, parseSse, sdkEvents, sdkFinalMessage } from './helpers';

const FIXTURES = join(__dirname, '../fixtures/backend');
const NAMES = [
  'vllm-text-cached',
  'vllm-reasoning-tool',
  'vllm-parallel-tools',
  'interleaved-tools',
  'vllm-stop-sequence',
  'vllm-overloaded-mid-stream',
  'cut-stream',
] as const;
type FixtureName = (typeof NAMES)[number];

/** The fixture as an upstream body: each event followed by a blank line, with `eol` line ends. */
function upstreamBody(name: FixtureName, eol: '\n' | '\r\n' = '\n'): Uint8Array {
  const lines = readFileSync(join(FIXTURES, `${name}.sse`), 'utf8')
    .split('\n')
    .filter((line) => line.length > 0);
  return new TextEncoder().encode(lines.map((line) => line + eol + eol).join(''));
}

/** Upstream bytes (in slices) → decoder → encoder → client SSE text, message id normalized. */
function translate(slices: readonly Uint8Array[]): string {
  const encoder = new AnthropicStreamEncoder(context());
  let out = '';
  const decoder = createChatStreamDecoder((event) => {
    out += encoder.push(event);
  });
  for (const slice of slices) decoder.push(slice);
  decoder.end();
  out += encoder.end();
  return out.replace(/msg_[A-Za-z0-9]{24}/g, 'msg_ID');
}

const clientEvents = (name: FixtureName) => parseSse(translate([upstreamBody(name)]));
const blockEvents = (name: FixtureName) =>
  clientEvents(name)
    .filter((e) => e.event?.startsWith('content_block'))
    .map((e) => ({ ...e.data }));

describe('recorded chat streams → Anthropic events', () => {
  it('vllm-text-cached: one text block and usage net of the cached prefix', async () => {
    const events = clientEvents('vllm-text-cached');
    expect(events.map((e) => e.event)).toEqual([
      'message_start',
      'ping',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    expect(events.at(-2)!.data).toEqual({
      type: 'message_delta',
      delta: { stop_reason: 'end_turn', stop_sequence: null },
      usage: { output_tokens: 8, input_tokens: 20, cache_creation_input_tokens: 0, cache_read_input_tokens: 1792 },
    });
    const message = await sdkFinalMessage(translate([upstreamBody('vllm-text-cached')]));
    expect(message.content).toEqual([{ type: 'text', text: 'The capital of France is Paris.' }]);
    expect(message.usage).toEqual({
      input_tokens: 20,
      output_tokens: 8,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 1792,
    });
  });

  it('vllm-reasoning-tool: thinking, text, then a tool_use streamed fragment by fragment', async () => {
    expect(blockEvents('vllm-reasoning-tool')).toEqual([
      { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'The user wants' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: ' the file read.' } },
      {
        type: 'content_block_delta',
        index: 0,
        delta: { type: 'signature_delta', signature: UNSIGNED_THINKING_SIGNATURE },
      },
      { type: 'content_block_stop', index: 0 },
      { type: 'content_block_start', index: 1, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: "I'll read it." } },
      { type: 'content_block_stop', index: 1 },
      {
        type: 'content_block_start',
        index: 2,
        content_block: { type: 'tool_use', id: 'chatcmpl-tool-5d2e9a', name: 'Read', input: {} },
      },
      { type: 'content_block_delta', index: 2, delta: { type: 'input_json_delta', partial_json: '{"file_path": "' } },
      {
        type: 'content_block_delta',
        index: 2,
        delta: { type: 'input_json_delta', partial_json: '/src/main.ts", "limit"' },
      },
      { type: 'content_block_delta', index: 2, delta: { type: 'input_json_delta', partial_json: ': 200}' } },
      { type: 'content_block_stop', index: 2 },
    ]);
    const message = await sdkFinalMessage(translate([upstreamBody('vllm-reasoning-tool')]));
    expect(message.stop_reason).toBe('tool_use');
    expect(message.content[2]).toEqual({
      type: 'tool_use',
      id: 'chatcmpl-tool-5d2e9a',
      name: 'Read',
      input: { file_path: '/src/main.ts', limit: 200 },
    });
    expect(message.usage.output_tokens).toBe(54);
    expect(message.usage.input_tokens).toBe(950);
  });

  it('vllm-parallel-tools: three tool_use blocks with multi-byte arguments intact', async () => {
    const message = await sdkFinalMessage(translate([upstreamBody('vllm-parallel-tools')]));
    expect(message.content).toEqual([
      { type: 'tool_use', id: 'chatcmpl-tool-01', name: 'get_weather', input: { city: 'Zürich' } },
      { type: 'tool_use', id: 'chatcmpl-tool-02', name: 'get_weather', input: { city: '東京' } },
      { type: 'tool_use', id: 'chatcmpl-tool-03', name: 'get_time', input: {} },
    ]);
    expect(message.stop_reason).toBe('tool_use');
  });

  it('interleaved-tools: the later call is buffered, blocks never interleave', async () => {
    expect(blockEvents('interleaved-tools')).toEqual([
      {
        type: 'content_block_start',
        index: 0,
        content_block: { type: 'tool_use', id: 'call_a', name: 'Grep', input: {} },
      },
      { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '{"pattern":' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '"TODO"}' } },
      { type: 'content_block_stop', index: 0 },
      {
        type: 'content_block_start',
        index: 1,
        content_block: { type: 'tool_use', id: 'call_b', name: 'Glob', input: {} },
      },
      { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '{"glob":"*.ts"}' } },
      { type: 'content_block_stop', index: 1 },
    ]);
    const message = await sdkFinalMessage(translate([upstreamBody('interleaved-tools')]));
    expect(message.content.map((block) => (block.type === 'tool_use' ? block.input : null))).toEqual([
      { pattern: 'TODO' },
      { glob: '*.ts' },
    ]);
    expect(message.usage).toMatchObject({ input_tokens: 120, output_tokens: 30 });
  });

  it('vllm-stop-sequence: stop_reason stop_sequence naming the matched string', async () => {
    const message = await sdkFinalMessage(translate([upstreamBody('vllm-stop-sequence')]));
    expect(message).toMatchObject({
      stop_reason: 'stop_sequence',
      stop_sequence: 'END',
      content: [{ type: 'text', text: '1, 2, 3' }],
    });
  });

  it('vllm-overloaded-mid-stream: an in-band overloaded_error, nothing after it', async () => {
    const events = clientEvents('vllm-overloaded-mid-stream');
    expect(events.map((e) => e.event)).toEqual([
      'message_start',
      'ping',
      'content_block_start',
      'content_block_delta',
      'error',
    ]);
    expect(events.at(-1)!.data).toEqual({
      type: 'error',
      error: { type: 'overloaded_error', message: expect.stringContaining('overloaded') },
    });
    await expect(sdkEvents(translate([upstreamBody('vllm-overloaded-mid-stream')]))).rejects.toMatchObject({
      type: 'overloaded_error',
    });
  });

  it('cut-stream: a stream cut before its finish ends in api_error, never a made-up stop', async () => {
    const events = clientEvents('cut-stream');
    expect(events.map((e) => e.event)).toEqual([
      'message_start',
      'ping',
      'content_block_start',
      'content_block_delta',
      'error',
    ]);
    expect((events.at(-1)!.data.error as { type: string }).type).toBe('api_error');
    expect(events.some((e) => e.event === 'message_delta')).toBe(false);
  });
});

describe('property: any split of the upstream bytes gives the same client events', () => {
  it.each(NAMES)('%s', (name) => {
    const body = upstreamBody(name);
    const expected = translate([body]);
    const crlfBody = upstreamBody(name, '\r\n');
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: body.length }), { maxLength: 24 }), fc.boolean(), (cuts, crlf) => {
        const bytes = crlf ? crlfBody : body;
        const scaled = crlf
          ? cuts.map((cut) => Math.min(bytes.length, Math.round((cut * bytes.length) / body.length)))
          : cuts;
        expect(translate(splitAt(bytes, scaled))).toBe(expected);
      }),
      { numRuns: 150 },
    );
  });

  it('byte-by-byte delivery gives the same client events', () => {
    for (const name of NAMES) {
      const body = upstreamBody(name);
      const slices = Array.from({ length: body.length }, (_, i) => body.subarray(i, i + 1));
      expect(translate(slices)).toBe(translate([body]));
    }
  });
});
