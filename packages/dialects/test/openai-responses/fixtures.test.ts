/**
 * Recorded upstream chat SSE (one raw event per line) → chat stream decoder → Responses encoder →
 * the openai v6 SDK. Fixtures come from `test/fixtures/backend/`.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import type { StreamEvent } from '@iop/core';
import { createChatStreamDecoder } from '../../src/openai-chat/stream-decode.js';
import { createResponsesStreamEncoder } from '../../src/openai-responses/stream-encode.js';
import { splitAt } from '../openai-chat/helpers.js';
import { checkGrammar, contextFor, parseFrames, viaSdk } from './helpers.js';

const FIXTURES = join(__dirname, '../fixtures/backend');

function fixture(path: string): Uint8Array {
  const lines = readFileSync(join(FIXTURES, path), 'utf8')
    .split('\n')
    .filter((line) => line.length > 0);
  return new TextEncoder().encode(lines.map((line) => `${line}\n\n`).join(''));
}

const TOOLS = {
  tools: [
    { type: 'function', name: 'get_weather', parameters: { type: 'object' }, strict: false },
    { type: 'function', name: 'get_time', parameters: { type: 'object' }, strict: false },
    { type: 'function', name: 'shell', parameters: { type: 'object' }, strict: false },
    { type: 'custom', name: 'apply_patch', description: 'Apply a patch' },
    {
      type: 'namespace',
      name: 'github',
      description: 'GitHub',
      tools: [{ type: 'function', name: 'get_issue', parameters: { type: 'object' } }],
    },
    { type: 'web_search' },
  ],
};

/** Upstream bytes in the given slices → client SSE text. */
function relay(slices: readonly Uint8Array[]): string {
  const encoder = createResponsesStreamEncoder(contextFor(TOOLS));
  let sse = '';
  const decoder = createChatStreamDecoder((event: StreamEvent) => {
    sse += encoder.push(event);
  });
  for (const slice of slices) decoder.push(slice);
  decoder.end();
  return sse + encoder.end();
}

/** The client events with the minted ids and timestamps replaced, for comparing two runs. */
function normalized(sse: string): unknown[] {
  return parseFrames(sse).map((frame) =>
    JSON.parse(
      JSON.stringify(frame.data)
        .replace(/"(resp|msg|rs|fc|ctc)_[A-Za-z0-9]{24}"/g, '"$1_X"')
        .replace(/"completed_at":\d+/g, '"completed_at":0'),
    ),
  );
}

const CASES = [
  'vllm-text.sse',
  'vllm-reasoning.sse',
  'vllm-tool-calls-parallel.sse',
  'vllm-error-mid-stream.sse',
  'missing-finish.sse',
  'vllm-custom-tool-call.sse',
  'vllm-namespace-call.sse',
];

describe('chat upstream fixtures → Responses clients', () => {
  it('text: completed, with usage and cached tokens', async () => {
    const sse = relay([fixture(CASES[0]!)]);
    checkGrammar(sse);
    const { final } = await viaSdk(sse);
    expect(final).toMatchObject({
      status: 'completed',
      output_text: 'Hello, wörld 👋',
      usage: { input_tokens: 12, input_tokens_details: { cached_tokens: 8 }, output_tokens: 5, total_tokens: 17 },
    });
  });

  it('reasoning cut by length: reasoning item, incomplete message, reasoning tokens', async () => {
    const { final } = await viaSdk(relay([fixture(CASES[1]!)]));
    expect(final.status).toBe('incomplete');
    expect(final.incomplete_details).toEqual({ reason: 'max_output_tokens' });
    expect(final.output).toMatchObject([
      { type: 'reasoning', content: [{ type: 'reasoning_text', text: 'The user greets me. Reply.' }] },
      { type: 'message', status: 'incomplete', content: [{ text: 'Hi!' }] },
    ]);
    expect(final.usage?.output_tokens_details.reasoning_tokens).toBe(5);
  });

  it('parallel tool calls: two function_call items keeping the upstream call ids', async () => {
    const { final } = await viaSdk(relay([fixture(CASES[2]!)]));
    expect(final.output).toMatchObject([
      { type: 'function_call', call_id: 'chatcmpl-tool-8c1f0e', name: 'get_weather', arguments: '{"city": "Paris"}' },
      { type: 'function_call', call_id: 'chatcmpl-tool-93ab27', name: 'get_time', arguments: '{"tz": "Europe/Paris"}' },
    ]);
  });

  it('upstream error mid-stream and a cut stream: response.failed', async () => {
    const failed = await viaSdk(relay([fixture(CASES[3]!)]));
    expect(failed.final.status).toBe('failed');
    expect(failed.final.error?.message).toContain('CUDA out of memory');
    expect(failed.final.output_text).toBe('Partial');
    expect((await viaSdk(relay([fixture(CASES[4]!)]))).final.status).toBe('failed');
  });

  it('custom tool call: reasoning, text, then custom_tool_call with the decoded patch text', async () => {
    const { final } = await viaSdk(relay([fixture(CASES[5]!)]));
    expect(final.output).toMatchObject([
      { type: 'reasoning', content: [{ text: 'Need to bump the constant.' }] },
      { type: 'message', content: [{ text: 'Applying the patch.' }] },
      {
        type: 'custom_tool_call',
        call_id: 'chatcmpl-tool-ap1',
        name: 'apply_patch',
        input: '*** Begin Patch\n*** Update File: src/app.ts\n@@\n-const x = 1;\n+const x = 2;\n*** End Patch\n',
      },
    ]);
    expect(final.usage).toMatchObject({
      input_tokens: 1200,
      input_tokens_details: { cached_tokens: 600 },
      output_tokens_details: { reasoning_tokens: 9 },
    });
  });

  it('namespace member call maps back to {namespace, name}', async () => {
    const { final } = await viaSdk(relay([fixture(CASES[6]!)]));
    expect(final.output).toMatchObject([
      { type: 'function_call', name: 'get_issue', namespace: 'github', arguments: '{"number": 42}' },
      { type: 'function_call', name: 'shell', arguments: '{"command": ["ls"]}' },
    ]);
  });

  it.each(CASES)('any split of the upstream bytes gives the same client events (%s)', (path) => {
    const bytes = fixture(path);
    const whole = normalized(relay([bytes]));
    checkGrammar(relay([bytes]));
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: bytes.length }), { maxLength: 12 }), (cuts) => {
        expect(normalized(relay(splitAt(bytes, cuts)))).toEqual(whole);
      }),
      { numRuns: 60 },
    );
  });
});
