import fc from 'fast-check';
import { decodesAnyBytesAs, stringMap, text, uint32 } from './codec-properties';
import { create, equals, fromBinary, toBinary } from '@bufbuild/protobuf';
import { ProviderTunnelFrameSchema, ProviderTunnelFrame_Kind } from '../src/gen/iop/v1/tunnel_pb.js';
import { decodeFrame, encodeFrameMessage, tunnelFrame, type FrameInit } from '../src/frame-codec.js';
import { grpcFrame } from '../src/grpc-message.js';

const usage = fc.record(
  { promptTokens: uint32, completionTokens: uint32, cachedTokens: uint32, reasoningTokens: uint32 },
  { requiredKeys: [] },
);
const init: fc.Arbitrary<FrameInit> = fc.record(
  {
    runId: text,
    kind: fc.oneof(fc.constantFrom(0, 1, 2, 3, 4, 5, 6), fc.integer({ min: -5, max: 1000 })),
    status: uint32,
    headers: stringMap,
    body: fc.oneof(fc.uint8Array({ maxLength: 40 }), fc.uint8Array({ minLength: 100, maxLength: 20_000 })),
    errorCode: fc.oneof(fc.integer({ min: 0, max: 12 }), fc.integer({ min: -5, max: 1000 })),
    errorMessage: text,
    usage,
  },
  { requiredKeys: ['runId', 'kind'] },
);

const reference = (frame: FrameInit) => create(ProviderTunnelFrameSchema, frame);

describe('ProviderTunnelFrame codec (against protobuf-es)', () => {
  it('builds frames equal to create()', () => {
    fc.assert(
      fc.property(init, (frame) => {
        expect(tunnelFrame(frame)).toEqual(reference(frame));
        expect(equals(ProviderTunnelFrameSchema, tunnelFrame(frame), reference(frame))).toBe(true);
      }),
    );
  });

  it('encodes any frame to the bytes of grpcFrame(toBinary())', () => {
    fc.assert(
      fc.property(init, (frame) => {
        const expected = grpcFrame(toBinary(ProviderTunnelFrameSchema, reference(frame)));
        expect(encodeFrameMessage(tunnelFrame(frame)).equals(expected)).toBe(true);
        expect(encodeFrameMessage(reference(frame)).equals(expected)).toBe(true);
      }),
      { numRuns: 500 },
    );
  });

  it('decodes any encoded frame to a message equal to fromBinary()', () => {
    fc.assert(
      fc.property(init, (frame) => {
        const payload = encodeFrameMessage(tunnelFrame(frame)).subarray(5);
        const decoded = decodeFrame(payload);
        expect(decoded).toEqual(fromBinary(ProviderTunnelFrameSchema, payload));
        expect(equals(ProviderTunnelFrameSchema, decoded, reference(frame))).toBe(true);
      }),
      { numRuns: 500 },
    );
  });

  it('decodes arbitrary bytes as fromBinary() does: an equal message or an error', () => {
    decodesAnyBytesAs(
      decodeFrame,
      (bytes) => fromBinary(ProviderTunnelFrameSchema, bytes),
      init.map((frame) => encodeFrameMessage(tunnelFrame(frame)).subarray(5)),
    );
  });

  it('returns the body as a view of the input, without copying', () => {
    const payload = encodeFrameMessage(
      tunnelFrame({ runId: 'run_1', kind: ProviderTunnelFrame_Kind.BODY, body: Buffer.from('data: {}\n\n') }),
    ).subarray(5);
    const frame = decodeFrame(payload);
    expect(Buffer.from(frame.body).toString()).toBe('data: {}\n\n');
    expect(frame.body.buffer).toBe(payload.buffer);
  });

  it('writes a BODY frame as run_id, kind, body (protobuf binary encoding)', () => {
    const bytes = encodeFrameMessage(
      tunnelFrame({ runId: 'r', kind: ProviderTunnelFrame_Kind.BODY, body: Buffer.from('ab') }),
    );
    expect([...bytes]).toEqual([0, 0, 0, 0, 9, 0x0a, 1, 0x72, 0x10, 2, 0x2a, 2, 0x61, 0x62]);
  });
});
