import { secretEquals, secretIn } from '../src/secret.js';

describe('secret comparison', () => {
  test('equal strings and bytes match; different ones and other lengths do not', () => {
    expect(secretEquals('sk-abc', 'sk-abc')).toBe(true);
    expect(secretEquals(Buffer.from('sk-abc'), 'sk-abc')).toBe(true);
    expect(secretEquals('sk-abc', 'sk-abd')).toBe(false);
    expect(secretEquals('sk-ab', 'sk-abc')).toBe(false);
    expect(secretEquals('', '')).toBe(true);
  });

  test('secretIn finds any of the candidates', () => {
    expect(secretIn('b', ['a', 'b', 'c'])).toBe(true);
    expect(secretIn('d', ['a', 'b', 'c'])).toBe(false);
    expect(secretIn('a', [])).toBe(false);
  });
});
