/**
 * Test helpers: run hub events through the Responses stream encoder, parse the SSE it writes,
 * check the B.3 grammar, and feed it to the real openai v6 SDK (`client.responses.stream`).
 */
import OpenAI from 'openai';
import { SseReader, type EncodeContext, type InferenceRequest, type StreamEvent } from '@iop/core';
import { createResponsesStreamEncoder } from '../../src/openai-responses/stream-encode.js';
import { decodeResponsesRequest } from '../../src/openai-responses/request-decode.js';
import type { ResponseObject } from '../../src/openai-responses/wire-types.js';

export function contextFor(body: Record<string, unknown> = {}): EncodeContext {
  const request: InferenceRequest = decodeResponsesRequest({ model: 'qwen3', input: 'hi', stream: true, ...body });
  return { requestId: 'req_test', model: 'qwen3', request, createdAt: 1764500000 };
}

/** Encodes the events (pushed one by one, then `end()`); returns the SSE text and the final Response. */
export function encode(
  events: readonly StreamEvent[],
  context: EncodeContext = contextFor(),
): { sse: string; result: ResponseObject | undefined } {
  const encoder = createResponsesStreamEncoder(context);
  let sse = '';
  for (const event of events) sse += encoder.push(event);
  sse += encoder.end();
  return { sse, result: encoder.result() };
}

export interface Frame {
  event: string | undefined;
  data: Record<string, unknown> & { type: string; sequence_number: number };
}

export function parseFrames(sse: string): Frame[] {
  const frames: Frame[] = [];
  const reader = new SseReader((event) => frames.push({ event: event.event, data: JSON.parse(event.data) }));
  reader.pushText(sse);
  reader.flush();
  return frames;
}

/**
 * Checks the Responses stream grammar (docs/protocols.md "Responses stream"): `response.created` first, SSE event name
 * = `type`, sequence numbers 0,1,2…, `output_item.added` appends at `output_index`, item-scoped events name the item at
 * that index, content parts append, exactly one terminal lifecycle event, last. Returns the frames.
 */
export function checkGrammar(sse: string): Frame[] {
  const frames = parseFrames(sse);
  const ids: string[] = [];
  const contentCounts: number[] = [];
  const terminals = ['response.completed', 'response.incomplete', 'response.failed'];
  expect(frames[0]?.data.type).toBe('response.created');
  frames.forEach((frame, i) => {
    expect(frame.event).toBe(frame.data.type);
    expect(frame.data.sequence_number).toBe(i);
    const data = frame.data as Record<string, unknown>;
    if (frame.data.type === 'response.output_item.added') {
      expect(data.output_index).toBe(ids.length);
      const item = data.item as { id: string; type: string; call_id?: string };
      expect(item.id).toMatch(/^(msg|rs|fc|ctc)_[A-Za-z0-9]{24}$/);
      if (item.type === 'function_call' || item.type === 'custom_tool_call') expect(item.call_id).toBeTruthy();
      ids.push(item.id);
      contentCounts.push(0);
    } else if (typeof data.item_id === 'string') {
      expect(data.item_id).toBe(ids[data.output_index as number]);
    }
    if (frame.data.type === 'response.content_part.added') {
      expect(data.content_index).toBe(contentCounts[data.output_index as number]);
      contentCounts[data.output_index as number]! += 1;
    }
    if (frame.data.type === 'response.output_item.done')
      expect((data.item as { id: string }).id).toBe(ids[data.output_index as number]);
    if (terminals.includes(frame.data.type)) expect(i).toBe(frames.length - 1);
  });
  const last = frames.at(-1)!.data as unknown as { type: string; response: ResponseObject };
  expect(terminals).toContain(last.type);
  expect(last.response.output.map((item) => item.id)).toEqual(ids);
  return frames;
}

/** Streams the SSE text through openai v6's `client.responses.stream(…)`; returns its events and `finalResponse()`. */
export async function viaSdk(sse: string): Promise<{ events: { type: string }[]; final: OpenAI.Responses.Response }> {
  const client = new OpenAI({
    apiKey: 'test',
    baseURL: 'http://iop.test/v1',
    maxRetries: 0,
    fetch: async () => new Response(sse, { status: 200, headers: { 'content-type': 'text/event-stream' } }),
  });
  const stream = client.responses.stream({ model: 'qwen3', input: 'hi' });
  const events: { type: string }[] = [];
  for await (const event of stream) events.push(event);
  return { events, final: await stream.finalResponse() };
}

/** The hub events most tests start and end with, and a request with one tool of each kind. */
export const start: StreamEvent = {
  type: 'response-start',
  id: 'chatcmpl-1',
  model: 'Qwen/Qwen3-8B',
  created: 1764500000,
};
export const usage: StreamEvent = {
  type: 'usage',
  usage: { inputTokens: 12, outputTokens: 5, cachedInputTokens: 8, reasoningTokens: 2 },
};

export const TOOLS = {
  tools: [
    {
      type: 'function',
      name: 'get_weather',
      parameters: { type: 'object', properties: { city: { type: 'string' } } },
      strict: false,
    },
    { type: 'function', name: 'get_time', parameters: null, strict: null },
    {
      type: 'custom',
      name: 'apply_patch',
      description: 'Apply a patch',
      format: { type: 'grammar', syntax: 'lark', definition: 'start: "x"' },
    },
    {
      type: 'namespace',
      name: 'github',
      description: 'GitHub',
      tools: [{ type: 'function', name: 'get_issue', parameters: { type: 'object' } }],
    },
  ],
};
