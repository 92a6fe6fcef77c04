import fc from 'fast-check';
import { dataUriProblem, isBase64, parseDataUri } from '../../src/shared/data-uri.js';

describe('isBase64', () => {
  it('accepts any standard or URL-safe base64 encoding of bytes, padded or not', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 1, maxLength: 200 }), (bytes) => {
        const buffer = Buffer.from(bytes);
        expect(isBase64(buffer.toString('base64'))).toBe(true);
        expect(isBase64(buffer.toString('base64url'))).toBe(true);
        expect(isBase64(buffer.toString('base64').replace(/=+$/, ''))).toBe(true);
      }),
    );
  });

  it('rejects a payload with any character outside the alphabet, wherever it is', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 3, maxLength: 60 }),
        fc.constantFrom('!', ' ', '\n', '.', '"', 'é', '\u0000', '%'),
        fc.nat(),
        (bytes, bad, at) => {
          const text = Buffer.from(bytes).toString('base64');
          const i = at % (text.length + 1);
          expect(isBase64(text.slice(0, i) + bad + text.slice(i))).toBe(false);
        },
      ),
    );
  });

  it('takes `=` only as up to two trailing padding characters', () => {
    expect(isBase64('QQ==')).toBe(true);
    expect(isBase64('QUE=')).toBe(true);
    expect(isBase64('Q===')).toBe(false);
    expect(isBase64('Q=Q=')).toBe(false);
    expect(isBase64('==')).toBe(false);
    expect(isBase64('')).toBe(false);
  });
});

describe('parseDataUri / dataUriProblem', () => {
  it('splits data:<mime>[;params];base64,<payload>', () => {
    expect(parseDataUri('data:image/png;base64,iVBORw0KGgo=')).toEqual({
      mediaType: 'image/png',
      data: 'iVBORw0KGgo=',
    });
    expect(parseDataUri('data:image/jpeg;name=a.jpg;base64,/9j/')).toEqual({ mediaType: 'image/jpeg', data: '/9j/' });
    expect(parseDataUri('data:image/png,rawbytes')).toBeUndefined();
    expect(parseDataUri('data:')).toBeUndefined();
  });

  it('names what is wrong', () => {
    expect(dataUriProblem('data:image/png;base64,iVBORw0KGgo=')).toBeUndefined();
    expect(dataUriProblem('data:')).toBe('must be a base64 data: URI (data:<mime>;base64,…)');
    expect(dataUriProblem('data:image/png;base64,')).toBe('has an empty base64 payload');
    expect(dataUriProblem('data:image/png;base64,!!!notbase64')).toBe('has a payload that is not valid base64');
  });
});
