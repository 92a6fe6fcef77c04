/**
 * Test helpers: an encode context for Gemini requests, and the client's reading of a Gemini stream as `@google/genai`
 * does it.
 */
import type { EncodeContext, InferenceRequest, StreamEvent } from '@iop/core';
import { GeminiStreamEncoder } from '../../src/gemini/stream-encode';
import type { GeminiState, GenerateContentResponse } from '../../src/gemini/wire-types';

export function context(state: Partial<GeminiState> = {}, request: Partial<InferenceRequest> = {}): EncodeContext {
  return {
    requestId: 'req_test',
    model: 'gemini-2.5-flash',
    request: {
      model: 'gemini-2.5-flash',
      messages: [],
      stream: true,
      dialectState: { sse: true, includeThoughts: false, ...state },
      ...request,
    },
    createdAt: 1_700_000_000,
  };
}

/** Runs events through a fresh encoder: the full body text (push for each, then end). */
export function encodeAll(events: readonly StreamEvent[], encodeContext: EncodeContext = context()): string {
  const encoder = new GeminiStreamEncoder(encodeContext);
  let text = '';
  for (const event of events) text += encoder.push(event);
  return text + encoder.end();
}

/**
 * The chunks of an SSE body as `@google/genai`'s `processStreamResponse` reads them: events split
 * on a blank line, each one `data: <json>`; anything else (an `event:` line, `[DONE]`, text left
 * at the end) fails the test.
 */
export function sseChunks(
  text: string,
): Array<GenerateContentResponse | { error: { code: number; status: string; message: string } }> {
  expect(text.endsWith('\n\n')).toBe(true);
  return text
    .split('\n\n')
    .slice(0, -1)
    .map((event) => {
      expect(event.startsWith('data: ')).toBe(true);
      expect(event.includes('\n')).toBe(false);
      return JSON.parse(event.slice('data: '.length)) as GenerateContentResponse;
    });
}

/** What a client accumulates from the chunks: joined text and thoughts, calls, the last finishReason and usage. */
export function accumulate(chunks: readonly object[]) {
  let text = '';
  let thoughts = '';
  const calls: unknown[] = [];
  let finishReason: string | undefined;
  let usage: unknown;
  let error: unknown;
  for (const chunk of chunks) {
    if ('error' in chunk) {
      error = chunk.error;
      continue;
    }
    const response = chunk as unknown as GenerateContentResponse;
    for (const part of response.candidates[0]!.content.parts) {
      if (part.functionCall !== undefined) calls.push(part.functionCall);
      else if (part.thought === true) thoughts += part.text;
      else text += part.text ?? '';
    }
    finishReason = response.candidates[0]!.finishReason ?? finishReason;
    usage = response.usageMetadata ?? usage;
  }
  return { text, thoughts, calls, finishReason, usage, error };
}
