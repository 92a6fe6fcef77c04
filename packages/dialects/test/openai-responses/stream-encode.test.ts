/** The Responses stream encoder over SSE: event order, items, tools, usage (docs/protocols.md "Responses stream"). */
import type { StreamEvent } from '@iop/core';
import { openaiResponses } from '../../src/openai-responses/dialect.js';
import { checkGrammar, contextFor, encode, parseFrames, start, TOOLS, usage, viaSdk } from './helpers.js';
import type { ResponseObject } from '../../src/openai-responses/wire-types.js';

describe('Responses stream encoder', () => {
  it('renders a text answer in the exact order of a Responses stream, with usage from a trailing usage event', async () => {
    const { sse, result } = encode([
      start,
      { type: 'text-delta', text: 'Hello' },
      { type: 'text-delta', text: ', wörld' },
      { type: 'finish', reason: 'stop', raw: 'stop' },
      usage,
    ]);
    const frames = checkGrammar(sse);
    expect(frames.map((frame) => frame.data.type)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(frames[4]!.data).toMatchObject({ delta: 'Hello', content_index: 0, output_index: 0, logprobs: [] });
    expect(frames[6]!.data).toMatchObject({ text: 'Hello, wörld' });
    expect(frames[0]!.data).toMatchObject({ response: { status: 'in_progress', output: [], object: 'response' } });
    const completed = frames[9]!.data.response as Record<string, unknown>;
    expect(completed).toMatchObject({
      status: 'completed',
      model: 'qwen3',
      output: [
        {
          type: 'message',
          role: 'assistant',
          status: 'completed',
          content: [{ type: 'output_text', text: 'Hello, wörld', annotations: [] }],
        },
      ],
      usage: {
        input_tokens: 12,
        input_tokens_details: { cached_tokens: 8, cache_write_tokens: 0 },
        output_tokens: 5,
        output_tokens_details: { reasoning_tokens: 2 },
        total_tokens: 17,
      },
      store: true,
      incomplete_details: null,
      error: null,
    });
    expect(result?.output_text).toBe('Hello, wörld');
    expect(result?.id).toBe(completed.id);

    const { final, events } = await viaSdk(sse);
    expect(events).toHaveLength(10);
    expect(final.status).toBe('completed');
    expect(final.output_text).toBe('Hello, wörld');
    expect(final.usage?.total_tokens).toBe(17);
  });

  it('renders reasoning as a reasoning item with reasoning_text parts before the message', async () => {
    const { sse } = encode([
      start,
      { type: 'reasoning-delta', text: 'The user' },
      { type: 'reasoning-delta', text: ' greets me.' },
      { type: 'text-delta', text: 'Hi!' },
      { type: 'finish', reason: 'stop', raw: 'stop' },
    ]);
    const frames = checkGrammar(sse);
    expect(frames.slice(2, 9).map((frame) => frame.data.type)).toEqual([
      'response.output_item.added',
      'response.content_part.added',
      'response.reasoning_text.delta',
      'response.reasoning_text.delta',
      'response.reasoning_text.done',
      'response.content_part.done',
      'response.output_item.done',
    ]);
    expect(frames[3]!.data.part).toEqual({ type: 'reasoning_text', text: '' });
    const { final } = await viaSdk(sse);
    expect(final.output[0]).toMatchObject({
      type: 'reasoning',
      summary: [],
      content: [{ type: 'reasoning_text', text: 'The user greets me.' }],
    });
    expect(final.output[1]).toMatchObject({ type: 'message', content: [{ text: 'Hi!' }] });
    expect(final.output_text).toBe('Hi!');
  });

  it('renders several function calls with their argument fragments, call ids and names', async () => {
    const context = contextFor(TOOLS);
    const { sse } = encode(
      [
        start,
        { type: 'tool-call-delta', index: 0, id: 'call_a', name: 'get_weather', argumentsDelta: '' },
        { type: 'tool-call-delta', index: 0, argumentsDelta: '{"city": "' },
        { type: 'tool-call-delta', index: 0, argumentsDelta: 'Paris"}' },
        { type: 'tool-call-delta', index: 1, id: 'call_b', name: 'get_time', argumentsDelta: '{}' },
        { type: 'finish', reason: 'tool_calls', raw: 'tool_calls' },
      ],
      context,
    );
    const frames = checkGrammar(sse);
    const deltas = frames
      .filter((frame) => frame.data.type === 'response.function_call_arguments.delta')
      .map((frame) => frame.data.delta);
    expect(deltas).toEqual(['{"city": "', 'Paris"}', '{}']);
    const done = frames
      .filter((frame) => frame.data.type === 'response.function_call_arguments.done')
      .map((frame) => frame.data);
    expect(done).toMatchObject([
      { name: 'get_weather', arguments: '{"city": "Paris"}', output_index: 0 },
      { name: 'get_time', arguments: '{}', output_index: 1 },
    ]);
    const { final } = await viaSdk(sse);
    expect(final.status).toBe('completed');
    expect(final.output).toMatchObject([
      {
        type: 'function_call',
        call_id: 'call_a',
        name: 'get_weather',
        arguments: '{"city": "Paris"}',
        status: 'completed',
      },
      { type: 'function_call', call_id: 'call_b', name: 'get_time', arguments: '{}', status: 'completed' },
    ]);
    expect(final.output[0]!.id).toMatch(/^fc_/);
  });

  it('maps a namespace member call back to {name, namespace} and a custom tool call to custom_tool_call with its text input', async () => {
    const context = contextFor(TOOLS);
    const patch = '*** Begin Patch\n*** End Patch\n';
    const args = JSON.stringify({ input: patch });
    const { sse, result } = encode(
      [
        start,
        {
          type: 'tool-call-delta',
          index: 0,
          id: 'call_gh',
          name: 'github__get_issue',
          argumentsDelta: '{"number": 42}',
        },
        { type: 'tool-call-delta', index: 1, id: 'call_ap', name: 'apply_patch', argumentsDelta: args.slice(0, 10) },
        { type: 'tool-call-delta', index: 1, argumentsDelta: args.slice(10) },
        { type: 'finish', reason: 'tool_calls', raw: 'tool_calls' },
      ],
      context,
    );
    const frames = checkGrammar(sse);
    expect(
      frames
        .filter((frame) => frame.data.type.startsWith('response.custom_tool_call_input'))
        .map((frame) => frame.data),
    ).toMatchObject([
      { type: 'response.custom_tool_call_input.delta', delta: patch, output_index: 1 },
      { type: 'response.custom_tool_call_input.done', input: patch, output_index: 1 },
    ]);
    const { final } = await viaSdk(sse);
    expect(final.output).toMatchObject([
      {
        type: 'function_call',
        call_id: 'call_gh',
        name: 'get_issue',
        namespace: 'github',
        arguments: '{"number": 42}',
      },
      { type: 'custom_tool_call', call_id: 'call_ap', name: 'apply_patch', input: patch },
    ]);
    expect(final.output[1]!.id).toMatch(/^ctc_/);
    expect(result?.output.map((item) => item.id)).toEqual(final.output.map((item) => item.id));
  });

  it('ends with response.incomplete / max_output_tokens on length, the open message marked incomplete', async () => {
    const { sse } = encode([
      start,
      { type: 'text-delta', text: 'Once upon' },
      { type: 'finish', reason: 'length', raw: 'length' },
    ]);
    const frames = checkGrammar(sse);
    expect(frames.at(-1)!.data).toMatchObject({
      type: 'response.incomplete',
      response: { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } },
    });
    const { final } = await viaSdk(sse);
    expect(final.status).toBe('incomplete');
    expect(final.incomplete_details?.reason).toBe('max_output_tokens');
    expect(final.output[0]).toMatchObject({ type: 'message', status: 'incomplete', content: [{ text: 'Once upon' }] });
  });

  it('maps content_filter to incomplete / content_filter', () => {
    const { result } = encode([start, { type: 'finish', reason: 'content_filter', raw: 'content_filter' }]);
    expect(result).toMatchObject({
      status: 'incomplete',
      incomplete_details: { reason: 'content_filter' },
      output: [],
    });
  });

  it('renders an error event as response.failed carrying the output so far', async () => {
    const { sse } = encode([
      start,
      { type: 'text-delta', text: 'Partial' },
      { type: 'error', code: 'upstream_error', message: 'CUDA out of memory' },
    ]);
    const frames = checkGrammar(sse);
    expect(frames.at(-1)!.data).toMatchObject({
      type: 'response.failed',
      response: { status: 'failed', error: { code: 'server_error', message: 'CUDA out of memory' } },
    });
    const { final } = await viaSdk(sse);
    expect(final.status).toBe('failed');
    expect(final.error).toEqual({ code: 'server_error', message: 'CUDA out of memory' });
    expect(final.output[0]).toMatchObject({ type: 'message', status: 'incomplete', content: [{ text: 'Partial' }] });
  });

  it('fails a stream that ends with no terminal event, and one that had no events at all', async () => {
    const cut = encode(
      [start, { type: 'tool-call-delta', index: 0, id: 'call_x', name: 'get_time', argumentsDelta: '{"tz"' }],
      contextFor(TOOLS),
    );
    checkGrammar(cut.sse);
    expect(cut.result).toMatchObject({
      status: 'failed',
      error: { code: 'server_error' },
      output: [{ type: 'function_call', status: 'incomplete', arguments: '{"tz"' }],
    });
    const empty = encode([]);
    expect(checkGrammar(empty.sse).map((frame) => frame.data.type)).toEqual([
      'response.created',
      'response.in_progress',
      'response.failed',
    ]);
    expect((await viaSdk(empty.sse)).final.status).toBe('failed');
  });

  it('echoes the request fields in the Response', () => {
    const { result } = encode(
      [start, { type: 'finish', reason: 'stop', raw: 'stop' }],
      contextFor({
        instructions: 'Be brief.',
        temperature: 0.2,
        top_p: 0.9,
        metadata: { team: 'a' },
        store: false,
        previous_response_id: 'resp_prev',
        max_output_tokens: 64,
        tool_choice: 'required',
        ...TOOLS,
        prompt_cache_key: 'k1',
        reasoning: { effort: 'low', summary: 'auto' },
      }),
    );
    expect(result).toMatchObject({
      object: 'response',
      instructions: 'Be brief.',
      temperature: 0.2,
      top_p: 0.9,
      metadata: { team: 'a' },
      store: false,
      previous_response_id: 'resp_prev',
      max_output_tokens: 64,
      tool_choice: 'required',
      tools: TOOLS.tools,
      prompt_cache_key: 'k1',
      reasoning: { effort: 'low', summary: 'auto' },
      created_at: 1764500000,
      parallel_tool_calls: true,
    });
  });

  it('exposes the final Response through result() only after end()', () => {
    const encoder = openaiResponses.createStreamEncoder(contextFor());
    encoder.push(start);
    encoder.push({ type: 'finish', reason: 'stop', raw: 'stop' });
    expect(encoder.result()).toBeUndefined();
    encoder.end();
    expect(encoder.result()).toMatchObject({ status: 'completed', output_text: '' });
  });

  it('settles the final Response before its terminal event, which an error pushed then turns into response.failed', async () => {
    const encoder = openaiResponses.createStreamEncoder(contextFor());
    let sse =
      encoder.push(start) +
      encoder.push({ type: 'text-delta', text: 'Hi' }) +
      encoder.push({ type: 'finish', reason: 'stop', raw: 'stop' });
    const settled = encoder.settle!() as { status: string; output_text: string; id: string; store: boolean };
    expect(settled).toMatchObject({ status: 'completed', output_text: 'Hi' });
    expect(parseFrames(sse).map((frame) => frame.data.type)).not.toContain('response.completed');
    settled.store = false;
    expect(encoder.push({ type: 'error', code: 'no_capacity', message: 'store down' })).toBe('');
    sse += encoder.end();
    const last = checkGrammar(sse).at(-1)!.data as unknown as { type: string; response: ResponseObject };
    expect(last.type).toBe('response.failed');
    expect(last.response).toMatchObject({ id: settled.id, status: 'failed', store: false, incomplete_details: null });
    expect(last.response.error?.message).toBe('store down');
    expect(last.response).not.toHaveProperty('output_text');
    const { final } = await viaSdk(sse);
    expect(final.status).toBe('failed');
  });

  it('writes the same stream whether or not settle() ran first', () => {
    const events: StreamEvent[] = [
      start,
      { type: 'text-delta', text: 'Hi' },
      { type: 'finish', reason: 'length', raw: 'length' },
      usage,
    ];
    const plain = encode(events).sse;
    const encoder = openaiResponses.createStreamEncoder(contextFor());
    let settledSse = '';
    for (const event of events) settledSse += encoder.push(event);
    encoder.settle!();
    settledSse += encoder.end();
    const strip = (sse: string) => parseFrames(sse).map((frame) => [frame.data.type, frame.data.sequence_number]);
    expect(strip(settledSse)).toEqual(strip(plain));
    expect(parseFrames(settledSse).at(-1)!.data).toMatchObject({
      type: 'response.incomplete',
      response: { status: 'incomplete', usage: { input_tokens: 12 } },
    });
  });
});
