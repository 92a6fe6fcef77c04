/**
 * The non-stream `GenerateContentResponse`, Google's error envelope and statuses, and the model
 * list's shape and paging.
 */
import type { StreamEvent } from '@iop/core';
import { IopError, ErrorCodes } from '@iop/core';
import { encodeGeminiResponse } from '../../src/gemini/response-encode';
import { geminiErrorResponse } from '../../src/gemini/errors';
import { geminiModelInfo, geminiModelList } from '../../src/gemini/model-list';
import { context } from './helpers';

const start: StreamEvent = { type: 'response-start', id: 'chatcmpl-1', model: 'Qwen/Qwen3-8B', created: 1 };

describe('encodeGeminiResponse', () => {
  it('joins runs of thoughts and text into parts, then the calls; STOP for a tool turn; usage split', () => {
    const response = encodeGeminiResponse(
      [
        start,
        { type: 'reasoning-delta', text: 'think ' },
        { type: 'reasoning-delta', text: 'more' },
        { type: 'text-delta', text: 'Hello ' },
        { type: 'text-delta', text: 'world' },
        { type: 'tool-call-delta', index: 0, id: 'call_a', name: 'f', argumentsDelta: '{"x":' },
        { type: 'tool-call-delta', index: 0, argumentsDelta: '1}' },
        { type: 'finish', reason: 'tool_calls', raw: 'tool_calls' },
        { type: 'usage', usage: { inputTokens: 20, outputTokens: 15, reasoningTokens: 5 } },
      ],
      context({ includeThoughts: true }),
    );
    expect(response).toEqual({
      candidates: [
        {
          content: {
            role: 'model',
            parts: [
              { text: 'think more', thought: true },
              { text: 'Hello world' },
              { functionCall: { id: 'call_a', name: 'f', args: { x: 1 } } },
            ],
          },
          finishReason: 'STOP',
          index: 0,
        },
      ],
      usageMetadata: { promptTokenCount: 20, candidatesTokenCount: 10, thoughtsTokenCount: 5, totalTokenCount: 35 },
      modelVersion: 'gemini-2.5-flash',
      responseId: expect.stringMatching(/^resp_/),
    });
  });

  it('maps content_filter to SAFETY, drops thoughts without includeThoughts, and throws the stream’s error', () => {
    const filtered = encodeGeminiResponse(
      [
        start,
        { type: 'reasoning-delta', text: 'x' },
        { type: 'text-delta', text: 'y' },
        { type: 'finish', reason: 'content_filter', raw: 'content_filter' },
      ],
      context(),
    );
    expect(filtered.candidates[0]).toMatchObject({ finishReason: 'SAFETY', content: { parts: [{ text: 'y' }] } });
    expect(filtered.usageMetadata).toEqual({ promptTokenCount: 0, candidatesTokenCount: 0, totalTokenCount: 0 });
    expect(() => encodeGeminiResponse([start, { type: 'error', code: 'timeout', message: 'late' }], context())).toThrow(
      IopError,
    );
    expect(() => encodeGeminiResponse([start, { type: 'text-delta', text: 'cut' }], context())).toThrow(
      'ended before the response was complete',
    );
  });
});

describe('geminiErrorResponse', () => {
  it('answers every code with Google’s status name and its HTTP code', () => {
    const expected: Record<string, [number, string]> = {
      invalid_request: [400, 'INVALID_ARGUMENT'],
      authentication: [401, 'UNAUTHENTICATED'],
      permission: [403, 'PERMISSION_DENIED'],
      model_not_found: [404, 'NOT_FOUND'],
      rate_limited: [429, 'RESOURCE_EXHAUSTED'],
      upstream_internal: [500, 'INTERNAL'],
      no_capacity: [503, 'UNAVAILABLE'],
      timeout: [504, 'DEADLINE_EXCEEDED'],
    };
    for (const code of ErrorCodes) {
      const rendered = geminiErrorResponse(new IopError(code, 'm'), 'req_1');
      const body = rendered.body as { error: { code: number; status: string; message: string } };
      expect(body.error.code).toBe(rendered.status);
      expect(body.error.message).toBe('m');
      if (expected[code] !== undefined) expect([rendered.status, body.error.status]).toEqual(expected[code]);
    }
  });

  it('a bad key carries ErrorInfo API_KEY_INVALID; a known delay RetryInfo and retry-after', () => {
    expect(geminiErrorResponse(new IopError('authentication', 'invalid API key'), 'r').body).toEqual({
      error: {
        code: 401,
        message: 'invalid API key',
        status: 'UNAUTHENTICATED',
        details: [
          {
            '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
            reason: 'API_KEY_INVALID',
            domain: 'googleapis.com',
            metadata: {},
          },
        ],
      },
    });
    const limited = geminiErrorResponse(new IopError('overloaded', 'busy', { retryAfterSeconds: 1.2 }), 'r');
    expect(limited.headers).toEqual({ 'x-request-id': 'r', 'retry-after': '2' });
    expect((limited.body as { error: { details: unknown } }).error.details).toEqual([
      { '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '2s' },
    ]);
  });
});

describe('geminiModelList', () => {
  const models = ['a', 'b', 'c'].map((id, i) => ({
    id,
    created: 0,
    contextLength: i === 0 ? 4096 : null,
    providers: 1,
  }));

  it('pages by pageSize with an opaque nextPageToken, absent on the last page', () => {
    const first = geminiModelList(models, new URLSearchParams('pageSize=2'));
    expect(first.models.map((model) => model.name)).toEqual(['models/a', 'models/b']);
    expect(first.models[0]).toMatchObject({
      baseModelId: 'a',
      inputTokenLimit: 4096,
      supportedGenerationMethods: ['generateContent', 'streamGenerateContent', 'countTokens'],
    });
    expect(first.models[1]!.inputTokenLimit).toBeUndefined();
    const second = geminiModelList(models, new URLSearchParams(`pageSize=2&pageToken=${first.nextPageToken}`));
    expect(second).toEqual({ models: [expect.objectContaining({ name: 'models/c' })] });
    expect(geminiModelList(models, new URLSearchParams()).models).toHaveLength(3);
    expect(() => geminiModelList(models, new URLSearchParams('pageToken=zz'))).toThrow(IopError);
  });

  it('finds one model with or without models/', () => {
    expect(geminiModelInfo(models, 'models/b')?.name).toBe('models/b');
    expect(geminiModelInfo(models, 'c')?.name).toBe('models/c');
    expect(geminiModelInfo(models, 'd')).toBeUndefined();
  });
});
