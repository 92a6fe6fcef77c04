import { countTokensResponse, decodeCountTokensRequest } from '../../src/anthropic-messages/count-tokens.js';
import { COUNT_TOKENS_BODY } from '../fixtures/count-tokens-body.js';

describe('count_tokens (docs/protocols.md "Token counting")', () => {
  const body = COUNT_TOKENS_BODY;

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
