/**
 * A hand-written codec for `iop.v1.ProviderTunnelFrame` (proto/iop/v1/tunnel.proto), the message
 * every Run call carries once per body slice. protobuf-es's reflective `create`/`toBinary`/
 * `fromBinary` walk the schema for each message, which was 7–12 % of the edge's and the agent's
 * CPU on the hot path; this codec knows the eight fields and writes them directly.
 *
 * It follows the protobuf binary encoding (protobuf.dev/programming-guides/encoding) exactly as
 * protobuf-es 2 writes it: fields in field-number order, proto3 implicit presence (zero values
 * omitted), each `headers` map entry with both key (1) and value (2), `usage` written whenever set and each of its
 * counts whenever present (explicit presence: an absent count is not reported, 0 is written), `error_code` (field 9,
 * the `RunErrorCode` enum) as a varint.
 * So `encodeFrameMessage(frame)` is byte-identical to `grpcFrame(toBinary(schema, frame))` and
 * `decodeFrame(bytes)` equals `fromBinary(schema, bytes)` (test/frame-codec.test.ts checks both
 * against protobuf-es for arbitrary frames). Whatever this codec does not expect — unknown fields,
 * a field repeated, an unexpected wire type, a kind outside 0–127 — goes through protobuf-es.
 */
import { fromBinary, toBinary } from '@bufbuild/protobuf';
import {
  ProviderTunnelFrameSchema,
  UsageSchema,
  type ProviderTunnelFrame,
  type ProviderTunnelFrame_Kind,
  type RunErrorCode,
  type Usage,
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
  writeVarint,
  asBuffer,
  bytesFieldSize,
  writeBytesField,
} from './wire.js';
import { grpcFrame } from './grpc-message.js';

const EMPTY = new Uint8Array(0);
const FRAME_TYPE = ProviderTunnelFrameSchema.typeName as 'iop.v1.ProviderTunnelFrame';
const USAGE_TYPE = UsageSchema.typeName as 'iop.v1.Usage';

/** Fields of a frame other than `$typeName`; omitted ones take their zero value. */
export interface FrameInit {
  runId: string;
  kind: ProviderTunnelFrame_Kind;
  status?: number;
  headers?: Record<string, string>;
  body?: Uint8Array;
  errorCode?: RunErrorCode;
  errorMessage?: string;
  usage?: { promptTokens?: number; completionTokens?: number; cachedTokens?: number; reasoningTokens?: number };
}

/** Builds a frame equal to `create(ProviderTunnelFrameSchema, init)`, without reflection. */
export function tunnelFrame(init: FrameInit): ProviderTunnelFrame {
  const frame: ProviderTunnelFrame = {
    $typeName: FRAME_TYPE,
    runId: init.runId,
    kind: init.kind,
    status: init.status ?? 0,
    headers: init.headers ?? {},
    body: init.body ?? EMPTY,
    errorMessage: init.errorMessage ?? '',
    errorCode: init.errorCode ?? 0,
  };
  if (init.usage !== undefined) frame.usage = usageMessage(init.usage);
  return frame;
}

/** A `Usage` message with the counts `init` has (an absent count stays absent: not reported). */
function usageMessage(init: NonNullable<FrameInit['usage']>): Usage {
  const usage: Usage = { $typeName: USAGE_TYPE };
  if (init.promptTokens !== undefined) usage.promptTokens = init.promptTokens;
  if (init.completionTokens !== undefined) usage.completionTokens = init.completionTokens;
  if (init.cachedTokens !== undefined) usage.cachedTokens = init.cachedTokens;
  if (init.reasoningTokens !== undefined) usage.reasoningTokens = init.reasoningTokens;
  return usage;
}

/** Bytes of a present count (tag and varint, 0 included); 0 when absent. */
function countSize(value: number | undefined): number {
  return value === undefined ? 0 : 1 + varintSize(value);
}

function usageSize(usage: Usage): number {
  return (
    countSize(usage.promptTokens) +
    countSize(usage.completionTokens) +
    countSize(usage.cachedTokens) +
    countSize(usage.reasoningTokens)
  );
}

function writeCount(out: Buffer, offset: number, tag: number, value: number | undefined): number {
  if (value === undefined) return offset;
  out[offset++] = tag;
  return writeVarint(out, offset, value);
}

const presentUint32 = (value: number | undefined) => value === undefined || isPlainUint32(value);

/** True when the frame holds only what this codec writes (no unknown fields, values in range). */
function encodable(frame: ProviderTunnelFrame): boolean {
  const unknown = (frame as { $unknown?: unknown[] }).$unknown;
  if (unknown !== undefined && unknown.length > 0) return false;
  if (!(frame.kind >= 0 && frame.kind < 0x80 && Number.isInteger(frame.kind)) || !isPlainUint32(frame.status))
    return false;
  if (!(frame.errorCode >= 0 && frame.errorCode < 0x80 && Number.isInteger(frame.errorCode))) return false;
  const usage = frame.usage;
  if (usage === undefined) return true;
  const usageUnknown = (usage as { $unknown?: unknown[] }).$unknown;
  return (
    (usageUnknown === undefined || usageUnknown.length === 0) &&
    presentUint32(usage.promptTokens) &&
    presentUint32(usage.completionTokens) &&
    presentUint32(usage.cachedTokens) &&
    presentUint32(usage.reasoningTokens)
  );
}

/**
 * The frame as one gRPC length-prefixed message (5-byte prefix, then the protobuf encoding), in
 * a single allocation: the bytes `grpcFrame(toBinary(ProviderTunnelFrameSchema, frame))` gives.
 */
export function encodeFrameMessage(frame: ProviderTunnelFrame): Buffer {
  if (!encodable(frame)) {
    return grpcFrame(toBinary(ProviderTunnelFrameSchema, frame));
  }
  const runIdBytes = frame.runId.length === 0 ? 0 : Buffer.byteLength(frame.runId);
  let size = runIdBytes === 0 ? 0 : stringFieldSize(runIdBytes);
  size += uint32FieldSize(frame.kind) + uint32FieldSize(frame.status);
  const headers = mapFieldSizes(frame.headers);
  size += headers.total;
  size += bytesFieldSize(frame.body.length);
  if (frame.errorCode !== 0) size += 2;
  const messageBytes = frame.errorMessage.length === 0 ? 0 : Buffer.byteLength(frame.errorMessage);
  if (messageBytes > 0) size += stringFieldSize(messageBytes);
  const usageBytes = frame.usage === undefined ? -1 : usageSize(frame.usage);
  if (usageBytes >= 0) size += 1 + varintSize(usageBytes) + usageBytes;

  const out = grpcMessageBuffer(size);
  let offset = 5;
  if (runIdBytes > 0) offset = writeString(out, offset, 0x0a, frame.runId, runIdBytes);
  if (frame.kind !== 0) {
    out[offset++] = 0x10;
    out[offset++] = frame.kind;
  }
  if (frame.status !== 0) {
    out[offset++] = 0x18;
    offset = writeVarint(out, offset, frame.status);
  }
  if (headers.sizes !== undefined) offset = writeMapField(out, offset, 0x22, frame.headers, headers.sizes);
  offset = writeBytesField(out, offset, 0x2a, frame.body);
  if (messageBytes > 0) offset = writeString(out, offset, 0x3a, frame.errorMessage, messageBytes);
  if (usageBytes >= 0) {
    const usage = frame.usage!;
    out[offset++] = 0x42;
    offset = writeVarint(out, offset, usageBytes);
    offset = writeCount(out, offset, 0x08, usage.promptTokens);
    offset = writeCount(out, offset, 0x10, usage.completionTokens);
    offset = writeCount(out, offset, 0x18, usage.cachedTokens);
    offset = writeCount(out, offset, 0x20, usage.reasoningTokens);
  }
  if (frame.errorCode !== 0) {
    out[offset] = 0x48;
    out[offset + 1] = frame.errorCode;
  }
  return out;
}

function decodeUsage(bytes: Uint8Array, end: number, state: { offset: number }): Usage | undefined {
  const usage = usageMessage({});
  let seen = 0;
  while (state.offset < end) {
    const tag = bytes[state.offset++]!;
    const field = tag >>> 3;
    if ((tag & 7) !== 0 || field < 1 || field > 4 || seen & (1 << field)) return undefined;
    seen |= 1 << field;
    const value = readVarint32(bytes, state);
    if (value === FALLBACK || state.offset > end) return undefined;
    if (field === 1) usage.promptTokens = value;
    else if (field === 2) usage.completionTokens = value;
    else if (field === 3) usage.cachedTokens = value;
    else usage.reasoningTokens = value;
  }
  return usage;
}

function decodeFast(bytes: Uint8Array): ProviderTunnelFrame | undefined {
  const buffer = asBuffer(bytes);
  const frame = tunnelFrame({ runId: '', kind: 0 });
  const state = { offset: 0 };
  let seen = 0;
  while (state.offset < bytes.length) {
    const tag = bytes[state.offset++]!;
    const field = tag >>> 3;
    const wireType = tag & 7;
    // Field 6 (the code as a string, before the enum) is an unknown field now: protobuf-es keeps it.
    if (tag >= 0x80 || field === 0 || field === 6 || field > 9) return undefined;
    if (field !== 4) {
      if (seen & (1 << field)) return undefined; // repeated scalar (last wins) or usage (merged)
      seen |= 1 << field;
    }
    if (field === 2 || field === 3 || field === 9) {
      if (wireType !== 0) return undefined;
      const value = readVarint32(bytes, state);
      if (value === FALLBACK) return undefined;
      if (field === 3) frame.status = value;
      else if (value > 0x7fffffff) return undefined;
      else if (field === 2) frame.kind = value;
      else frame.errorCode = value;
      continue;
    }
    if (wireType !== 2) return undefined;
    const length = readLength(bytes, state);
    if (length === FALLBACK) return undefined;
    const start = state.offset;
    const end = start + length;
    if (field === 5) frame.body = bytes.subarray(start, end);
    else if (field === 4) {
      if (!decodeMapEntry(buffer, end, state, frame.headers)) return undefined;
    } else if (field <= 7) {
      const text = ascii(buffer, start, end);
      if (text === FALLBACK) return undefined;
      if (field === 1) frame.runId = text;
      else frame.errorMessage = text;
    } else {
      const usage = decodeUsage(bytes, end, state);
      if (usage === undefined) return undefined;
      frame.usage = usage;
    }
    state.offset = end;
  }
  return frame;
}

/**
 * Decodes one ProviderTunnelFrame; equal to `fromBinary(ProviderTunnelFrameSchema, bytes)`.
 * `body` is a view of `bytes` (no copy), as protobuf-es gives it.
 * @throws Error (from protobuf-es) for bytes that are not a valid encoding.
 */
export function decodeFrame(bytes: Uint8Array): ProviderTunnelFrame {
  return decodeFast(bytes) ?? fromBinary(ProviderTunnelFrameSchema, bytes);
}
