import { countMessageTokens, promptTokenIds, splitTokens, textTokenIds, tokenId } from '../../src/tokenizer.js';

describe('textTokenIds', () => {
  const long = Array.from({ length: 3_000 }, (_, i) => `word${i % 97}`).join(' ');

  it('gives the ids of the text’s tokens, remembering a long text (the same array on the next call)', () => {
    const ids = textTokenIds(long);
    expect(ids).toEqual(splitTokens(long).map(tokenId));
    expect(ids).toHaveLength(3_000);
    expect(textTokenIds(long)).toBe(ids);
    // a short text is tokenized each time
    expect(textTokenIds('hello there')).toEqual([tokenId('hello'), tokenId(' there')]);
    expect(textTokenIds('hello there')).not.toBe(textTokenIds('hello there'));
  });

  it('keeps prompt ids and counts as the tokenizer gives them', () => {
    const messages = [
      { role: 'system', content: long },
      { role: 'user', content: [{ type: 'text', text: 'a b' }] },
    ];
    expect(promptTokenIds(messages)).toEqual([...splitTokens(long).map(tokenId), tokenId('a'), tokenId(' b')]);
    expect(countMessageTokens(messages)).toBe(3_002);
  });
});
