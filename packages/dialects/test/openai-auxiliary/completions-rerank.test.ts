import { IopError } from '@iop/core';
import { readCompletionsRequest } from '../../src/openai-auxiliary/completions-request.js';
import { orderRerankAnswer, readRerankRequest, readScoreRequest } from '../../src/openai-auxiliary/rerank-request.js';

function paramOf(read: (body: unknown) => unknown, body: unknown): string | undefined {
  try {
    read(body);
    return 'accepted';
  } catch (error) {
    expect(error).toBeInstanceOf(IopError);
    expect((error as IopError).status).toBe(400);
    return (error as IopError).param;
  }
}

describe('readCompletionsRequest', () => {
  it('accepts the prompt shapes, suffix, echo, logprobs, n, stop and stream options', () => {
    expect(
      readCompletionsRequest({ model: 'm', prompt: 'hi', suffix: 'end', logprobs: 5, n: 3, stop: ['a'], stream: true }),
    ).toMatchObject({
      model: 'm',
      stream: true,
      includeUsage: false,
      prompts: 1,
      n: 3,
    });
    expect(
      readCompletionsRequest({ model: 'm', prompt: ['a', 'b'], stream: true, stream_options: { include_usage: true } }),
    ).toMatchObject({
      prompts: 2,
      includeUsage: true,
    });
    expect(readCompletionsRequest({ model: 'm', prompt: [[1, 2], [3]] }).prompts).toBe(2);
    expect(readCompletionsRequest({ model: 'm', prompt: [1, 2, 3] }).promptTokensEstimate).toBe(3);
    expect(readCompletionsRequest({ model: 'm', prompt: 'x', echo: true, max_tokens: 0 }).prompts).toBe(1);
  });

  it('names the bad field', () => {
    const read = readCompletionsRequest;
    expect(paramOf(read, { model: 'm' })).toBe('prompt');
    expect(paramOf(read, { model: 'm', prompt: {} })).toBe('prompt');
    expect(paramOf(read, { model: 'm', prompt: [] })).toBe('prompt');
    expect(paramOf(read, { model: 'm', prompt: ['a', 1] })).toBe('prompt.1');
    expect(paramOf(read, { model: 'm', prompt: 'x', suffix: 3 })).toBe('suffix');
    expect(paramOf(read, { model: 'm', prompt: 'x', suffix: 's', echo: true })).toBe('echo');
    expect(paramOf(read, { model: 'm', prompt: 'x', logprobs: 21 })).toBe('logprobs');
    expect(paramOf(read, { model: 'm', prompt: 'x', max_tokens: 0 })).toBe('max_tokens');
    expect(paramOf(read, { model: 'm', prompt: 'x', n: 0 })).toBe('n');
    expect(paramOf(read, { model: 'm', prompt: 'x', best_of: 3 })).toBe('best_of');
    expect(paramOf(read, { model: 'm', prompt: 'x', stop: [1] })).toBe('stop');
    expect(paramOf(read, { model: 'm', prompt: 'x', temperature: 3 })).toBe('temperature');
    expect(paramOf(read, { model: 'm', prompt: 'x', stream_options: 1 })).toBe('stream_options');
    expect(paramOf(read, { model: 'm', prompt: 'x', logit_bias: [] })).toBe('logit_bias');
  });
});

describe('rerank and score', () => {
  it('reads documents as strings or {text}; top_n 0 means all', () => {
    const request = readRerankRequest({ model: 'm', query: 'q', documents: ['a', { text: 'b' }], top_n: 0 });
    expect(request).toMatchObject({
      documents: ['a', 'b'],
      topN: undefined,
      returnDocuments: true,
      backendFields: { documents: ['a', 'b'] },
    });
    expect(paramOf(readRerankRequest, { model: 'm', query: 'q', documents: [{}] })).toBe('documents.0');
    expect(paramOf(readRerankRequest, { model: 'm', query: '', documents: ['a'] })).toBe('query');
    expect(paramOf(readRerankRequest, { model: 'm', query: 'q', documents: 'a' })).toBe('documents');
    expect(paramOf(readRerankRequest, { model: 'm', query: 'q', documents: ['a'], return_documents: 'yes' })).toBe(
      'return_documents',
    );
  });

  it('pairs score texts 1:1, 1:N and N:N', () => {
    expect(readScoreRequest({ model: 'm', text_1: 'a', text_2: 'b' }).pairs).toBe(1);
    expect(readScoreRequest({ model: 'm', text_1: 'a', text_2: ['b', 'c'] }).pairs).toBe(2);
    expect(readScoreRequest({ model: 'm', text_1: ['a', 'b'], text_2: ['c', 'd'] }).pairs).toBe(2);
    expect(paramOf(readScoreRequest, { model: 'm', text_1: ['a', 'b'], text_2: 'c' })).toBe('text_2');
    expect(paramOf(readScoreRequest, { model: 'm', text_1: [], text_2: 'c' })).toBe('text_1');
    expect(paramOf(readScoreRequest, { model: 'm', text_1: 'a', text_2: ['c', 2] })).toBe('text_2.1');
  });

  it('orders a backend answer in document order (llama.cpp server) by score, cut to top_n, with the documents', () => {
    const request = readRerankRequest({ model: 'm', query: 'q', documents: ['zero', 'one', 'two'], top_n: 2 });
    const backend = Buffer.from(
      JSON.stringify({
        model: 'm',
        usage: { prompt_tokens: 9, total_tokens: 9 },
        results: [0, 1, 2].map((index) => ({ index, relevance_score: [-1.5, 3, 0.2][index] })),
      }),
    );
    expect(JSON.parse(orderRerankAnswer(backend, request).toString())).toEqual({
      model: 'm',
      usage: { prompt_tokens: 9, total_tokens: 9 },
      results: [
        { index: 1, relevance_score: 3, document: { text: 'one' } },
        { index: 2, relevance_score: 0.2, document: { text: 'two' } },
      ],
    });
    const bare = readRerankRequest({
      model: 'm',
      query: 'q',
      documents: ['zero', 'one', 'two'],
      return_documents: false,
    });
    expect((JSON.parse(orderRerankAnswer(backend, bare).toString()) as { results: unknown[] }).results).toEqual([
      { index: 1, relevance_score: 3 },
      { index: 2, relevance_score: 0.2 },
      { index: 0, relevance_score: -1.5 },
    ]);
    for (const body of ['x', '{"results":[{"index":7,"relevance_score":1}]}', '{"results":[{"index":0}]}']) {
      expect(() => orderRerankAnswer(Buffer.from(body), request)).toThrow(
        expect.objectContaining({ code: 'upstream_error' }) as Error,
      );
    }
  });
});
