/**
 * Test helpers: decode a Messages body (and expect its 400), parse Anthropic SSE text, and run it through the official
 * SDK's MessageStream.
 */
import { IopError } from '@iop/core';
import { anthropicMessages } from '../../src/anthropic-messages/dialect.js';
import type { EncodeContext, InferenceRequest, StreamEvent } from '@iop/core';
import { SseReader } from '@iop/core';
import { MessageStream } from '@anthropic-ai/sdk/lib/MessageStream';
import { Stream } from '@anthropic-ai/sdk/core/streaming';
import type { Message, MessageStreamEvent } from '@anthropic-ai/sdk/resources/messages';
import { AnthropicStreamEncoder } from '../../src/anthropic-messages/stream-encode';

export interface ParsedSse {
  event: string | undefined;
  data: Record<string, unknown>;
}

/** Splits SSE text into events (every frame's data is JSON). */
export function parseSse(text: string): ParsedSse[] {
  const events: ParsedSse[] = [];
  const reader = new SseReader((event) => events.push({ event: event.event, data: JSON.parse(event.data) }));
  reader.pushText(text);
  reader.flush();
  return events;
}

export function context(request: Partial<InferenceRequest> = {}): EncodeContext {
  return {
    requestId: 'req_test',
    model: 'claude-sonnet-4-5',
    // Thinking enabled unless a test says otherwise: most fixtures carry reasoning.
    request: { model: 'claude-sonnet-4-5', messages: [], stream: true, reasoning: { enabled: true }, ...request },
    createdAt: 1_700_000_000,
  };
}

/** Runs events through a fresh encoder and returns the full SSE text (push for each, then end). */
export function encodeAll(events: readonly StreamEvent[], encodeContext: EncodeContext = context()): string {
  const encoder = new AnthropicStreamEncoder(encodeContext);
  let text = '';
  for (const event of events) text += encoder.push(event);
  return text + encoder.end();
}

function bodyOf(text: string): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder().encode(text);
  return new ReadableStream({
    start(controller) {
      controller.enqueue(bytes);
      controller.close();
    },
  });
}

/** What the official SDK's SSE layer yields for this stream (it throws APIError on `event: error`). */
export async function sdkEvents(text: string): Promise<MessageStreamEvent[]> {
  const stream = Stream.fromSSEResponse<MessageStreamEvent>(new Response(bodyOf(text)), new AbortController());
  const events: MessageStreamEvent[] = [];
  for await (const event of stream) events.push(event);
  return events;
}

/** The Message the official SDK's MessageStream accumulates from this SSE text. */
export async function sdkFinalMessage(text: string): Promise<Message> {
  const stream = Stream.fromSSEResponse<MessageStreamEvent>(new Response(bodyOf(text)), new AbortController());
  const messageStream = MessageStream.fromReadableStream(stream.toReadableStream());
  const message = await messageStream.finalMessage();
  // The accumulator keeps tool input behind a lazy getter; a JSON round trip yields plain values.
  return JSON.parse(JSON.stringify(message)) as Message;
}

/** The Messages request decoder of the dialect. */
export const decode = (body: unknown) => anthropicMessages.decodeRequest(body);

/** Asserts a 400 naming `param`. */
export function expectBadRequest(
  body: unknown,
  param: string,
  code: 'invalid_request' | 'unsupported_field' = 'invalid_request',
): void {
  let caught: unknown;
  try {
    decode(body);
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(IopError);
  expect(caught).toMatchObject({ code, status: 400, param });
}

/** The smallest valid body. */
export const base = { model: 'claude-sonnet-4-5', max_tokens: 1024, messages: [{ role: 'user', content: 'hi' }] };
