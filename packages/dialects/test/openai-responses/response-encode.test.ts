/** The Responses non-stream encoder: the Response object of a whole answer. */
import { encodeResponsesResponse } from '../../src/openai-responses/response-encode.js';
import { contextFor, start, usage, TOOLS } from './helpers.js';

describe('Responses non-stream encoder', () => {
  it('builds the Response object with output_text and usage', () => {
    const response = encodeResponsesResponse(
      [
        start,
        { type: 'reasoning-delta', text: 'think' },
        { type: 'text-delta', text: 'Hi' },
        { type: 'tool-call-delta', index: 0, id: 'call_1', name: 'get_time', argumentsDelta: '{}' },
        { type: 'finish', reason: 'tool_calls', raw: 'tool_calls' },
        usage,
      ],
      contextFor(TOOLS),
    );
    expect(response).toMatchObject({
      object: 'response',
      status: 'completed',
      output_text: 'Hi',
      output: [
        { type: 'reasoning' },
        { type: 'message', status: 'completed' },
        { type: 'function_call', call_id: 'call_1', name: 'get_time', status: 'completed' },
      ],
      usage: { total_tokens: 17 },
    });
  });

  it('throws the error event as an IopError with its code and status', () => {
    expect(() =>
      encodeResponsesResponse([start, { type: 'error', code: 'rate_limited', message: 'slow down' }], contextFor()),
    ).toThrow(expect.objectContaining({ code: 'rate_limited', status: 429, message: 'slow down' }));
    expect(() => encodeResponsesResponse([start, { type: 'text-delta', text: 'x' }], contextFor())).toThrow(
      expect.objectContaining({ code: 'upstream_error' }),
    );
  });
});
