/**
 * What the hand-written codec tests share: the arbitraries for field values, and the property that
 * a codec's decoder treats any bytes as protobuf-es's `fromBinary` does.
 */
import fc from 'fast-check';

export const uint32 = fc.oneof(
  fc.constant(0),
  fc.integer({ min: 0, max: 300 }),
  fc.integer({ min: 0, max: 0xffffffff }),
);

export const text = fc.oneof(
  fc.constant(''),
  fc.string(),
  fc.string({ unit: 'grapheme' }),
  fc.string({ unit: 'binary' }),
  fc.string({ unit: 'binary-ascii', maxLength: 300 }),
);

/**
 * `map<string, string>` values: any keys but `__proto__`, which protobuf-es itself cannot hold (its
 * decoder and `create` assign map keys, and assigning `__proto__` does not make an entry), so no
 * message with it round-trips through the reference either.
 */
export const stringMap = fc.dictionary(
  text.filter((key) => key !== '__proto__'),
  text,
  { maxKeys: 6 },
);

/**
 * Checks that `decode` gives, for random bytes and for mutations of real encodings (which reach
 * the known-field paths more often), a message equal to `reference`'s or an error where it throws.
 * @param encoded real encodings (payloads, without the gRPC prefix) to mutate.
 */
export function decodesAnyBytesAs(
  decode: (bytes: Buffer) => unknown,
  reference: (bytes: Buffer) => unknown,
  encoded: fc.Arbitrary<Buffer>,
): void {
  const outcome = (run: () => unknown) => {
    try {
      return { ok: run() };
    } catch {
      return { error: true };
    }
  };
  const random = fc.uint8Array({ maxLength: 60 }).map((bytes) => Buffer.from(bytes));
  const mutated = fc
    .tuple(encoded, fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 4 }))
    .map(([payload, edits]) => {
      const bytes = Buffer.from(payload);
      for (const [at, value] of edits) if (bytes.length > 0) bytes[at % bytes.length] = value;
      return bytes;
    });
  fc.assert(
    fc.property(fc.oneof(random, mutated), (bytes) => {
      expect(outcome(() => decode(bytes))).toEqual(outcome(() => reference(bytes)));
    }),
    { numRuns: 2000 },
  );
}
