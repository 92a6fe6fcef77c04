import { classifyChunk, finishReasonsOf, parseChunkData } from '../src/chunk.js';
import { chatUsageOf } from '../src/chat-usage.js';

describe('one chunk of the backend Chat stream', () => {
  it('reads an event data as [DONE], JSON or malformed', () => {
    expect(parseChunkData('[DONE]')).toEqual({ kind: 'done' });
    expect(parseChunkData('{"a":1}')).toEqual({ kind: 'json', value: { a: 1 } });
    expect(parseChunkData('{"a":')).toEqual({ kind: 'malformed' });
  });

  it("classifies the backend's error (error key or SSE event: error), a chunk, and JSON that is no chunk", () => {
    expect(classifyChunk({ error: { message: 'boom', code: 503 } })).toEqual({
      kind: 'error',
      error: { type: 'error', code: 'no_capacity', message: 'boom' },
    });
    expect(classifyChunk({ message: 'bad' }, 'error')).toMatchObject({ kind: 'error', error: { message: 'bad' } });
    expect(classifyChunk({ error: null, choices: [] })).toEqual({ kind: 'chunk', chunk: { error: null, choices: [] } });
    expect(classifyChunk([1])).toEqual({ kind: 'not-object' });
    expect(finishReasonsOf({ choices: [{ finish_reason: 'stop' }, { finish_reason: null }] })).toEqual(['stop']);
  });

  it('reads usage keeping a count not reported apart from one reported as 0', () => {
    expect(chatUsageOf({ prompt_tokens: 5, completion_tokens: 0 })).toEqual({ inputTokens: 5, outputTokens: 0 });
    expect(chatUsageOf({ prompt_tokens: null, completion_tokens: -1, prompt_tokens_details: null })).toEqual({});
    expect(chatUsageOf(null)).toBeUndefined();
  });
});
