import fc from 'fast-check';
import { MIN_SHARED_LENGTH, decodeRecord, encodeRecord } from '../../../src/responses-store/record-codec';
import type { StoredResponse } from '../../../src/responses-store/store';

const big = 'x'.repeat(1024 * 1024);

function recordWith(input: string): StoredResponse {
  return {
    id: 'resp_1',
    createdAt: 1,
    response: {
      id: 'resp_1',
      object: 'response',
      output: [{ type: 'message', content: [{ type: 'output_text', text: 'the answer' }] }],
    },
    inputItems: [{ id: 'msg_1', type: 'message', role: 'user', content: input }],
    conversation: [{ role: 'user', content: [{ type: 'text', text: input }] }],
  } as unknown as StoredResponse;
}

describe('record codec', () => {
  it('stores a repeated long input once', () => {
    const text = encodeRecord(recordWith(big));
    expect(text.length).toBeLessThan(big.length + 2_000);
    expect(JSON.stringify(recordWith(big)).length).toBeGreaterThan(2 * big.length);
    expect(decodeRecord(text)).toEqual(recordWith(big));
  });

  it('keeps a "__proto__" key as data', () => {
    const record = JSON.parse(
      '{"id":"resp","createdAt":0,"response":{"__proto__":{"polluted":true}},"inputItems":[],"conversation":[]}',
    ) as StoredResponse;
    const decoded = decodeRecord(encodeRecord(record));
    expect(Object.keys(decoded.response)).toEqual(['__proto__']);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('reads rows written as plain JSON', () => {
    expect(decodeRecord(JSON.stringify(recordWith('hello')))).toEqual(recordWith('hello'));
  });

  it('round-trips any JSON value, strings with U+0000 and repeats included', () => {
    const long = fc.string({ minLength: MIN_SHARED_LENGTH, maxLength: MIN_SHARED_LENGTH + 8 });
    const strings = fc.oneof(
      fc.string(),
      long,
      fc.constantFrom('\u0000', '\u00000', '\u0000\u00001', `\u0000${'y'.repeat(MIN_SHARED_LENGTH)}`),
    );
    const json = fc.letrec((tie) => ({
      value: fc.oneof(
        { depthSize: 'small' },
        strings,
        fc.integer(),
        fc.boolean(),
        fc.constant(null),
        fc.array(tie('value'), { maxLength: 5 }),
        fc.dictionary(fc.string({ maxLength: 4 }), tie('value'), { maxKeys: 4 }),
      ),
    })).value;
    fc.assert(
      fc.property(json, strings, (value, repeated) => {
        const record = {
          id: 'resp',
          createdAt: 0,
          response: { value, repeated },
          inputItems: [repeated, value],
          conversation: [repeated],
        } as unknown as StoredResponse;
        expect(decodeRecord(encodeRecord(record))).toEqual(JSON.parse(JSON.stringify(record)));
      }),
    );
  });
});
