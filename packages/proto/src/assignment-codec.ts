/**
 * A hand-written codec for the Control stream's per-run message, `iop.v1.EdgeMessage` carrying a
 * `RunAssignment` (proto/iop/v1/tunnel.proto): the edge encodes one for every run it assigns and
 * the agent decodes it. protobuf-es's reflective `create`/`toBinary`/`fromBinary` walked the schema
 * for each of them (about 3 % of the edge's and 4 % of the agent's CPU per run); the other Control
 * messages (Register, Registered, Heartbeat, CancelRun, Drain) are rare and go through protobuf-es.
 *
 * Same contract as frame-codec.ts: the protobuf binary encoding as protobuf-es 2 writes it (fields
 * in field-number order, proto3 implicit presence, map entries with key and value), so
 * `encodeEdgeMessage(message)` is byte-identical to `grpcFrame(toBinary(EdgeMessageSchema, message))`
 * and `decodeEdgeMessage(bytes)` equals `fromBinary(EdgeMessageSchema, bytes)`
 * (test/assignment-codec.test.ts checks both for arbitrary messages). Anything else (another case,
 * unknown fields, a field repeated, non-ASCII text on decode, prefix keys on decode) goes through
 * protobuf-es.
 */
import { fromBinary, toBinary } from '@bufbuild/protobuf';
import {
  EdgeMessageSchema,
  PrefixKeySchema,
  RunAssignmentSchema,
  type EdgeMessage,
  type PrefixKey,
  type RunAssignment,
} from './gen/iop/v1/tunnel_pb.js';
import {
  FALLBACK,
  ascii,
  decodeMapEntry,
  grpcMessageBuffer,
  isPlainUint32,
  mapFieldSizes,
  readLength,
  readVarint32,
  stringFieldSize,
  uint32FieldSize,
  varintSize,
  writeMapField,
  writeString,
  writeUint32Field,
  writeVarint,
  asBuffer,
  bytesFieldSize,
  writeBytesField,
} from './wire.js';
import { grpcFrame } from './grpc-message.js';

const EMPTY = new Uint8Array(0);
const ASSIGNMENT_TYPE = RunAssignmentSchema.typeName as 'iop.v1.RunAssignment';
const EDGE_MESSAGE_TYPE = EdgeMessageSchema.typeName as 'iop.v1.EdgeMessage';

/** Fields of a RunAssignment other than `$typeName`; omitted ones take their zero value. */
export interface RunAssignmentInit {
  runId: string;
  requestId?: string;
  model?: string;
  method?: string;
  path?: string;
  headers?: Record<string, string>;
  body?: Uint8Array;
  idempotencyKey?: string;
  firstByteTimeoutMs?: number;
  idleTimeoutMs?: number;
  /** Prefix keys for a kv-events agent (53-bit keys, shortest prefix first). */
  prefixKeys?: Array<{ key: bigint; messages: number }>;
}

const PREFIX_KEY_TYPE = PrefixKeySchema.typeName as 'iop.v1.PrefixKey';

/** A PrefixKey equal to `create(PrefixKeySchema, { key, messages })`. */
export function prefixKey(key: bigint, messages: number): PrefixKey {
  return { $typeName: PREFIX_KEY_TYPE, key, messages };
}

/** Builds a RunAssignment equal to `create(RunAssignmentSchema, init)`, without reflection. */
export function runAssignment(init: RunAssignmentInit): RunAssignment {
  return {
    $typeName: ASSIGNMENT_TYPE,
    runId: init.runId,
    requestId: init.requestId ?? '',
    model: init.model ?? '',
    method: init.method ?? '',
    path: init.path ?? '',
    headers: init.headers ?? {},
    body: init.body ?? EMPTY,
    idempotencyKey: init.idempotencyKey ?? '',
    firstByteTimeoutMs: init.firstByteTimeoutMs ?? 0,
    idleTimeoutMs: init.idleTimeoutMs ?? 0,
    prefixKeys:
      init.prefixKeys === undefined || init.prefixKeys.length === 0
        ? []
        : init.prefixKeys.map((entry) => prefixKey(entry.key, entry.messages)),
  };
}

/** An EdgeMessage equal to `create(EdgeMessageSchema, { message })` for an already built value. */
export function edgeMessage(message: EdgeMessage['message']): EdgeMessage {
  return { $typeName: EDGE_MESSAGE_TYPE, message };
}

const hasUnknown = (message: object) => {
  const unknown = (message as { $unknown?: unknown[] }).$unknown;
  return unknown !== undefined && unknown.length > 0;
};

/** The string fields 1–5 of a RunAssignment, in field order, with their tag bytes. */
const STRING_FIELDS = [
  [0x0a, 'runId'],
  [0x12, 'requestId'],
  [0x1a, 'model'],
  [0x22, 'method'],
  [0x2a, 'path'],
] as const;

/** Varint bytes of a safe integer (up to 53 bits). */
function varintSize53(value: number): number {
  let bytes = 1;
  for (let rest = value; rest >= 0x80; rest = Math.floor(rest / 0x80)) bytes++;
  return bytes;
}

function writeVarint53(out: Buffer, offset: number, value: number): number {
  let rest = value;
  while (rest > 0x7f) {
    out[offset++] = (rest % 0x80) | 0x80;
    rest = Math.floor(rest / 0x80);
  }
  out[offset++] = rest;
  return offset;
}

/**
 * Encoded size of each PrefixKey (field 16) without its tag and length; undefined for a key over 53 bits or a count
 * that is not a uint32.
 */
function prefixKeySizes(keys: readonly PrefixKey[]): number[] | undefined {
  const sizes: number[] = [];
  for (const entry of keys) {
    if (entry.key > MAX_SAFE_KEY || entry.key < 0n || !isPlainUint32(entry.messages) || hasUnknown(entry))
      return undefined;
    const key = Number(entry.key);
    sizes.push((key === 0 ? 0 : 1 + varintSize53(key)) + uint32FieldSize(entry.messages));
  }
  return sizes;
}

const MAX_SAFE_KEY = BigInt(Number.MAX_SAFE_INTEGER);

/**
 * Encodes an assignment as one gRPC message. `split`: the body is not copied in; the result is
 * the bytes before it, the body itself and the bytes after it (which, written in order, are the
 * same message).
 */
function encodeAssign(assignment: RunAssignment, split: boolean, prefixSizes: readonly number[]): Buffer[] {
  const stringBytes = STRING_FIELDS.map(([, field]) =>
    assignment[field].length === 0 ? 0 : Buffer.byteLength(assignment[field]),
  );
  let size = 0;
  for (const bytes of stringBytes) if (bytes > 0) size += stringFieldSize(bytes);
  const headers = mapFieldSizes(assignment.headers);
  size += headers.total;
  size += bytesFieldSize(assignment.body.length);
  const keyBytes = assignment.idempotencyKey.length === 0 ? 0 : Buffer.byteLength(assignment.idempotencyKey);
  if (keyBytes > 0) size += stringFieldSize(keyBytes);
  size += uint32FieldSize(assignment.firstByteTimeoutMs) + uint32FieldSize(assignment.idleTimeoutMs);
  for (const inner of prefixSizes) size += 2 + varintSize(inner) + inner; // field 16: a two-byte tag

  const messageBytes = 1 + varintSize(size) + size;
  const bodyBytes = split ? assignment.body.length : 0;
  const out = grpcMessageBuffer(messageBytes - bodyBytes);
  if (split) out.writeUInt32BE(messageBytes, 1);
  out[5] = 0x12; // EdgeMessage.assign (field 2), length-delimited
  let offset = writeVarint(out, 6, size);
  for (let index = 0; index < STRING_FIELDS.length; index++) {
    const [tag, field] = STRING_FIELDS[index]!;
    if (stringBytes[index]! > 0) offset = writeString(out, offset, tag, assignment[field], stringBytes[index]!);
  }
  if (headers.sizes !== undefined) offset = writeMapField(out, offset, 0x32, assignment.headers, headers.sizes);
  let bodyAt = -1;
  if (split) {
    out[offset++] = 0x3a;
    offset = writeVarint(out, offset, bodyBytes);
    bodyAt = offset;
  } else offset = writeBytesField(out, offset, 0x3a, assignment.body);
  if (keyBytes > 0) offset = writeString(out, offset, 0x42, assignment.idempotencyKey, keyBytes);
  offset = writeUint32Field(out, offset, 0x48, assignment.firstByteTimeoutMs);
  offset = writeUint32Field(out, offset, 0x50, assignment.idleTimeoutMs);
  assignment.prefixKeys.forEach((entry, index) => {
    out[offset++] = 0x82; // RunAssignment.prefix_keys (field 16), length-delimited
    out[offset++] = 0x01;
    offset = writeVarint(out, offset, prefixSizes[index]!);
    if (entry.key !== 0n) {
      out[offset++] = 0x08;
      offset = writeVarint53(out, offset, Number(entry.key));
    }
    offset = writeUint32Field(out, offset, 0x10, entry.messages);
  });
  return split ? [out.subarray(0, bodyAt), asBuffer(assignment.body), out.subarray(bodyAt)] : [out];
}

const NO_PREFIX_KEYS: readonly number[] = [];

/** The assignment and its prefix keys' sizes when the fast codec encodes this message (else protobuf-es does). */
function fastAssignment(
  message: EdgeMessage,
): { assignment: RunAssignment; prefixSizes: readonly number[] } | undefined {
  const assignment = message.message.case === 'assign' ? message.message.value : undefined;
  if (
    assignment === undefined ||
    hasUnknown(message) ||
    hasUnknown(assignment) ||
    !isPlainUint32(assignment.firstByteTimeoutMs) ||
    !isPlainUint32(assignment.idleTimeoutMs)
  ) {
    return undefined;
  }
  const prefixSizes = assignment.prefixKeys.length === 0 ? NO_PREFIX_KEYS : prefixKeySizes(assignment.prefixKeys);
  return prefixSizes === undefined ? undefined : { assignment, prefixSizes };
}

/**
 * The message as one gRPC length-prefixed message in parts, for a writer that sends a large
 * assignment without copying its body: an assignment with a body of at least `splitBodyBytes`
 * comes as [bytes before the body, the body (the same memory), bytes after it]; anything else as
 * one part, `encodeEdgeMessage`'s. Written in order, the parts are `encodeEdgeMessage`'s bytes.
 */
export function encodeEdgeMessageParts(message: EdgeMessage, splitBodyBytes: number): Buffer[] {
  const fast = fastAssignment(message);
  if (fast === undefined) return [grpcFrame(toBinary(EdgeMessageSchema, message))];
  const { assignment, prefixSizes } = fast;
  return encodeAssign(assignment, assignment.body.length > 0 && assignment.body.length >= splitBodyBytes, prefixSizes);
}

/**
 * The message as one gRPC length-prefixed message (5-byte prefix, then the protobuf encoding), in
 * a single allocation: the bytes `grpcFrame(toBinary(EdgeMessageSchema, message))` gives.
 */
export function encodeEdgeMessage(message: EdgeMessage): Buffer {
  const fast = fastAssignment(message);
  return fast === undefined
    ? grpcFrame(toBinary(EdgeMessageSchema, message))
    : encodeAssign(fast.assignment, false, fast.prefixSizes)[0]!;
}

/** RunAssignment fields 1–10 from `state.offset` to `end`; undefined for anything this codec does not read. */
function decodeAssignment(bytes: Buffer, end: number, state: { offset: number }): RunAssignment | undefined {
  const assignment = runAssignment({ runId: '' });
  let seen = 0;
  while (state.offset < end) {
    const tag = bytes[state.offset++]!;
    const field = tag >>> 3;
    const wireType = tag & 7;
    if (tag >= 0x80 || field === 0 || field > 10) return undefined;
    if (field !== 6) {
      if (seen & (1 << field)) return undefined; // a repeated scalar: last wins in protobuf-es
      seen |= 1 << field;
    }
    if (field >= 9) {
      if (wireType !== 0) return undefined;
      const value = readVarint32(bytes, state);
      if (value === FALLBACK || state.offset > end) return undefined;
      if (field === 9) assignment.firstByteTimeoutMs = value;
      else assignment.idleTimeoutMs = value;
      continue;
    }
    if (wireType !== 2) return undefined;
    const length = readLength(bytes, state);
    if (length === FALLBACK || state.offset + length > end) return undefined;
    const start = state.offset;
    const fieldEnd = start + length;
    if (field === 7) assignment.body = bytes.subarray(start, fieldEnd);
    else if (field === 6) {
      if (!decodeMapEntry(bytes, fieldEnd, state, assignment.headers)) return undefined;
    } else {
      const text = ascii(bytes, start, fieldEnd);
      if (text === FALLBACK) return undefined;
      if (field === 8) assignment.idempotencyKey = text;
      else assignment[STRING_FIELDS[field - 1]![1]] = text;
    }
    state.offset = fieldEnd;
  }
  return assignment;
}

function decodeFast(bytes: Uint8Array): EdgeMessage | undefined {
  const buffer = asBuffer(bytes);
  if (buffer.length < 2 || buffer[0] !== 0x12) return undefined;
  const state = { offset: 1 };
  const length = readLength(buffer, state);
  // a second field: protobuf-es merges or replaces
  if (length === FALLBACK || state.offset + length !== buffer.length) return undefined;
  const assignment = decodeAssignment(buffer, buffer.length, state);
  return assignment === undefined ? undefined : edgeMessage({ case: 'assign', value: assignment });
}

/**
 * Decodes one EdgeMessage; equal to `fromBinary(EdgeMessageSchema, bytes)`. An assignment's `body`
 * is a view of `bytes` (no copy), as protobuf-es gives it.
 * @throws Error (from protobuf-es) for bytes that are not a valid encoding.
 */
export function decodeEdgeMessage(bytes: Uint8Array): EdgeMessage {
  return decodeFast(bytes) ?? fromBinary(EdgeMessageSchema, bytes);
}
