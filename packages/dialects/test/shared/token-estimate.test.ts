/** The token estimate every dialect's requests share (docs/protocols.md "Token counting"). */
import { decodeCountTokensRequest } from '../../src/anthropic-messages/count-tokens.js';
import { COUNT_TOKENS_BODY } from '../fixtures/count-tokens-body.js';
import {
  estimateRequestTokens,
  estimateTokens,
  IMAGE_TOKENS_ESTIMATE,
  MESSAGE_OVERHEAD_TOKENS,
  renderCountTokensText,
} from '../../src/shared/token-estimate.js';

describe('token estimate (docs/protocols.md "Token counting")', () => {
  const body = COUNT_TOKENS_BODY;

  it('renders system, messages and tool definitions as the text to count', () => {
    expect(renderCountTokensText(decodeCountTokensRequest(body))).toBe(
      'system\nBe terse.\nuser\nWhat is in /a?\nassistant\nRead({"path":"/a"})\ntool\nhello\n' +
        '{"name":"Read","description":"Read a file","parameters":{"type":"object","properties":{"path":{"type":"string"}}}}\n',
    );
  });

  it('estimates ¼ token per ASCII character, 1 per CJK character, ½ per other code unit, rounded up', () => {
    expect(estimateTokens('')).toBe(0);
    expect(estimateTokens('abcd')).toBe(1);
    expect(estimateTokens('abcde')).toBe(2);
    expect(estimateTokens('日本語')).toBe(3);
    expect(estimateTokens('éé')).toBe(1);
  });

  it('adds per-message overhead and a fixed cost per image', () => {
    const request = decodeCountTokensRequest({
      model: 'm',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'abcd' },
            { type: 'image', source: { type: 'url', url: 'https://i' } },
          ],
        },
      ],
    });
    // "user\nabcd\n" is 10 ASCII characters → 3 tokens
    expect(estimateRequestTokens(request)).toBe(3 + MESSAGE_OVERHEAD_TOKENS + IMAGE_TOKENS_ESTIMATE);
  });
});
