import fc from 'fast-check';
import { GrpcMessageError, GrpcMessageReader, grpcFrame, type GrpcMessage } from '../src/grpc-message.js';

const payloads = [Buffer.from('hello'), Buffer.alloc(0), Buffer.alloc(70_000, 7), Buffer.from([0, 1, 2, 3, 4, 5])];
const wire = Buffer.concat(payloads.map((payload) => grpcFrame(payload)));

function readAll(chunks: Buffer[], reader = new GrpcMessageReader()): GrpcMessage[] {
  const out: GrpcMessage[] = [];
  for (const chunk of chunks)
    reader.push(chunk, (message) =>
      out.push({ compressed: message.compressed, payload: Buffer.from(message.payload) }),
    );
  return out;
}

describe('GrpcMessageReader (gRPC Length-Prefixed-Message framing)', () => {
  it('frames a message as flag 0, 4-byte big-endian length, payload', () => {
    expect([...grpcFrame(Buffer.from('ab'))]).toEqual([0, 0, 0, 0, 2, 0x61, 0x62]);
  });

  it('returns every message of one read, in order, as views without copying', () => {
    const seen: Uint8Array[] = [];
    new GrpcMessageReader().push(wire, (message) => seen.push(message.payload));
    expect(seen.map((payload) => Buffer.from(payload))).toEqual(payloads);
    expect(seen[0]!.buffer).toBe(wire.buffer);
  });

  it('gives the same messages for any split of the bytes', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: wire.length - 1 }), { maxLength: 20 }), (cuts) => {
        const points = [...new Set(cuts)].sort((a, b) => a - b);
        const chunks: Buffer[] = [];
        let last = 0;
        for (const point of [...points, wire.length]) {
          chunks.push(wire.subarray(last, point));
          last = point;
        }
        const messages = readAll(chunks);
        expect(messages.map((message) => message.payload)).toEqual(payloads);
        expect(messages.every((message) => !message.compressed)).toBe(true);
      }),
    );
  });

  it('reports the compressed flag and refuses a length over the limit', () => {
    const compressed = Buffer.from([1, 0, 0, 0, 1, 9]);
    expect(readAll([compressed])).toEqual([{ compressed: true, payload: Buffer.from([9]) }]);
    expect(() => new GrpcMessageReader(10).push(Buffer.from([0, 0, 0, 0, 11]), () => undefined)).toThrow(
      GrpcMessageError,
    );
  });
});
