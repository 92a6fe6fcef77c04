import { validateHeaderValue } from 'node:http';
import fc from 'fast-check';
import { DEFAULT_HEADER_VALUE_MAX_LENGTH, headerValue } from '../../../src/http/header-value';

describe('headerValue', () => {
  it('percent-encodes a non-Latin-1 field name as UTF-8 and keeps ASCII as it is', () => {
    expect(headerValue('dropped 名前: not supported on this server')).toBe(
      'dropped %E5%90%8D%E5%89%8D: not supported on this server',
    );
    expect(headerValue('dropped café')).toBe('dropped caf%C3%A9');
    expect(headerValue('100% a\r\nb\tc')).toBe('100%25 a%0D%0Ab%09c');
    expect(headerValue('lone \ud800 surrogate')).toBe('lone %EF%BF%BD surrogate');
  });

  it('cuts long values at a character boundary with a marker', () => {
    const value = headerValue('é'.repeat(5_000));
    expect(value.length).toBeLessThanOrEqual(DEFAULT_HEADER_VALUE_MAX_LENGTH);
    expect(value.endsWith('...')).toBe(true);
    expect(() => decodeURIComponent(value.slice(0, -3))).not.toThrow();
    expect(headerValue('abcdefghij', 8)).toBe('abcde...');
    expect(headerValue('ab%cdefghij', 6)).toBe('ab...');
  });

  it('always returns a value node:http accepts, and the original text when not cut (any string)', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'binary', maxLength: 300 }),
        fc.integer({ min: 8, max: 400 }),
        (text, maxLength) => {
          const value = headerValue(text, maxLength);
          expect(() => validateHeaderValue('x-test', value)).not.toThrow();
          expect(value).toMatch(/^[\x20-\x7e]*$/);
          expect(value.length).toBeLessThanOrEqual(maxLength);
          if (!value.endsWith('...') && !/[\ud800-\udfff]/u.test(text))
            expect(decodeURIComponent(value)).toBe(text.replace(/^ +| +$/g, ''));
        },
      ),
    );
  });
});
