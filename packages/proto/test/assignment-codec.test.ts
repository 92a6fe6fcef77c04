import fc from 'fast-check';
import { decodesAnyBytesAs, stringMap, text, uint32 } from './codec-properties';
import { create, equals, fromBinary, toBinary } from '@bufbuild/protobuf';
import { CancelRunSchema, EdgeMessageSchema, RunAssignmentSchema } from '../src/gen/iop/v1/tunnel_pb.js';
import {
  decodeEdgeMessage,
  edgeMessage,
  encodeEdgeMessage,
  encodeEdgeMessageParts,
  runAssignment,
  type RunAssignmentInit,
} from '../src/assignment-codec.js';
import { grpcFrame } from '../src/grpc-message.js';

const init: fc.Arbitrary<RunAssignmentInit> = fc.record(
  {
    runId: text,
    requestId: text,
    model: text,
    method: fc.oneof(fc.constantFrom('POST', 'GET'), text),
    path: fc.oneof(fc.constantFrom('/v1/chat/completions', '/tokenize'), text),
    headers: stringMap,
    body: fc.oneof(fc.uint8Array({ maxLength: 40 }), fc.uint8Array({ minLength: 100, maxLength: 20_000 })),
    idempotencyKey: text,
    firstByteTimeoutMs: uint32,
    idleTimeoutMs: uint32,
    // kv-events agents only; such an assignment goes through protobuf-es
    prefixKeys: fc.array(fc.record({ key: fc.bigInt({ min: 0n, max: 2n ** 53n - 1n }), messages: uint32 }), {
      maxLength: 3,
    }),
  },
  { requiredKeys: ['runId'] },
);

const reference = (assignment: RunAssignmentInit) =>
  create(EdgeMessageSchema, { message: { case: 'assign', value: create(RunAssignmentSchema, assignment) } });
const ours = (assignment: RunAssignmentInit) => edgeMessage({ case: 'assign', value: runAssignment(assignment) });

describe('EdgeMessage assignment codec (against protobuf-es)', () => {
  it('builds assignments and messages equal to create()', () => {
    fc.assert(
      fc.property(init, (assignment) => {
        expect(ours(assignment)).toEqual(reference(assignment));
        expect(equals(EdgeMessageSchema, ours(assignment), reference(assignment))).toBe(true);
      }),
    );
  });

  it('encodes any assignment to the bytes of grpcFrame(toBinary())', () => {
    fc.assert(
      fc.property(init, (assignment) => {
        const expected = grpcFrame(toBinary(EdgeMessageSchema, reference(assignment)));
        expect(encodeEdgeMessage(ours(assignment)).equals(expected)).toBe(true);
      }),
      { numRuns: 500 },
    );
  });

  it('encodes any assignment in parts whose concatenation is those bytes, the body as a view of its own memory', () => {
    fc.assert(
      fc.property(init, fc.integer({ min: 1, max: 30_000 }), (assignment, splitBodyBytes) => {
        const message = ours(assignment);
        const parts = encodeEdgeMessageParts(message, splitBodyBytes);
        expect(Buffer.concat(parts).equals(grpcFrame(toBinary(EdgeMessageSchema, reference(assignment))))).toBe(true);
        const body = (message.message.value as { body: Uint8Array }).body;
        if (body.length >= splitBodyBytes && body.length > 0) {
          expect(parts).toHaveLength(3);
          expect(parts[1]!.buffer).toBe(body.buffer);
        } else expect(parts).toHaveLength(1);
      }),
      { numRuns: 300 },
    );
  });

  it('encodes the other Control messages through protobuf-es', () => {
    const cancel = create(EdgeMessageSchema, {
      message: { case: 'cancel', value: create(CancelRunSchema, { runId: 'run_1', reason: 'client gone' }) },
    });
    expect(encodeEdgeMessage(cancel).equals(grpcFrame(toBinary(EdgeMessageSchema, cancel)))).toBe(true);
    expect(decodeEdgeMessage(encodeEdgeMessage(cancel).subarray(5))).toEqual(cancel);
  });

  it('decodes any encoded message to one equal to fromBinary()', () => {
    fc.assert(
      fc.property(init, (assignment) => {
        const payload = encodeEdgeMessage(ours(assignment)).subarray(5);
        const decoded = decodeEdgeMessage(payload);
        expect(decoded).toEqual(fromBinary(EdgeMessageSchema, payload));
        expect(equals(EdgeMessageSchema, decoded, reference(assignment))).toBe(true);
      }),
      { numRuns: 500 },
    );
  });

  it('decodes arbitrary bytes as fromBinary() does: an equal message or an error', () => {
    decodesAnyBytesAs(
      decodeEdgeMessage,
      (bytes) => fromBinary(EdgeMessageSchema, bytes),
      init.map((assignment) => encodeEdgeMessage(ours(assignment)).subarray(5)),
    );
  });

  it('returns the body as a view of the input, without copying', () => {
    const payload = encodeEdgeMessage(ours({ runId: 'run_1', body: Buffer.from('{"model":"m"}') })).subarray(5);
    const message = decodeEdgeMessage(payload);
    if (message.message.case !== 'assign') throw new Error('not an assignment');
    expect(Buffer.from(message.message.value.body).toString()).toBe('{"model":"m"}');
    expect(message.message.value.body.buffer).toBe(payload.buffer);
  });

  it('writes an assignment as EdgeMessage field 2 holding run_id, method, body (protobuf binary encoding)', () => {
    const bytes = encodeEdgeMessage(ours({ runId: 'r', method: 'GET', body: Buffer.from('x'), idleTimeoutMs: 5 }));
    expect([...bytes]).toEqual([
      0, 0, 0, 0, 15, 0x12, 13, 0x0a, 1, 0x72, 0x22, 3, 0x47, 0x45, 0x54, 0x3a, 1, 0x78, 0x50, 5,
    ]);
  });
});
