import { countTokensResponse, decodeCountTokensRequest } from '../../src/anthropic-messages/count-tokens.js';

describe('count_tokens (docs/protocols.md "Token counting")', () => {
  const body = {
    model: 'claude-sonnet-4-5',
    system: 'Be terse.',
    messages: [
      { role: 'user', content: 'What is in /a?' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 't', name: 'Read', input: { path: '/a' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: 'hello' }] },
    ],
    tools: [
      {
        name: 'Read',
        description: 'Read a file',
        input_schema: { type: 'object', properties: { path: { type: 'string' } } },
      },
    ],
    thinking: { type: 'enabled', budget_tokens: 2048 },
  };

  it('decodes a body without max_tokens or stream', () => {
    const request = decodeCountTokensRequest(body);
    expect(request.maxOutputTokens).toBeUndefined();
    expect(request.stream).toBe(false);
    expect(request.messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool']);
  });

  it('answers with input_tokens', () => {
    expect(countTokensResponse(42)).toEqual({ input_tokens: 42 });
  });
});
