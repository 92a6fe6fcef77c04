/**
 * The protobuf binary encoding pieces the hand-written codecs share (frame-codec.ts,
 * assignment-codec.ts): varints, length-delimited strings, `map<string, string>` fields, and the
 * readers that give up (FALLBACK) on anything they do not expect, so the caller decodes that
 * message with protobuf-es instead. Follows protobuf.dev/programming-guides/encoding as
 * protobuf-es 2 writes it: map entries carry both key (1) and value (2).
 */

export function varintSize(value: number): number {
  if (value < 0x80) return 1;
  if (value < 0x4000) return 2;
  if (value < 0x200000) return 3;
  if (value < 0x10000000) return 4;
  return 5;
}

export function writeVarint(out: Buffer, offset: number, value: number): number {
  while (value > 0x7f) {
    out[offset++] = (value & 0x7f) | 0x80;
    value >>>= 7;
  }
  out[offset++] = value;
  return offset;
}

/** A string field (tag byte, length, UTF-8) at `offset`; returns the next offset. */
export function writeString(out: Buffer, offset: number, tag: number, value: string, bytes: number): number {
  out[offset++] = tag;
  offset = writeVarint(out, offset, bytes);
  return offset + out.write(value, offset, bytes, 'utf8');
}

export const stringFieldSize = (bytes: number) => 1 + varintSize(bytes) + bytes;
export const uint32FieldSize = (value: number) => (value === 0 ? 0 : 1 + varintSize(value));

export function isPlainUint32(value: number): boolean {
  return value >>> 0 === value;
}

export function writeUint32Field(out: Buffer, offset: number, tag: number, value: number): number {
  if (value === 0) return offset;
  out[offset++] = tag;
  return writeVarint(out, offset, value);
}

/** Signals "not the shape this codec reads": the caller falls back to protobuf-es. */
export const FALLBACK = Symbol('fallback');

/** Reads a varint of at most 32 bits at `state.offset`; FALLBACK for a longer or truncated one. */
export function readVarint32(bytes: Uint8Array, state: { offset: number }): number | typeof FALLBACK {
  let result = 0;
  let shift = 0;
  let offset = state.offset;
  while (offset < bytes.length) {
    const byte = bytes[offset++]!;
    if (shift === 28) {
      if (byte > 0x0f) return FALLBACK; // more than 32 bits, or a negative int32 (10 bytes)
      result += byte * 2 ** 28;
      state.offset = offset;
      return result;
    }
    result |= (byte & 0x7f) << shift;
    if (byte < 0x80) {
      state.offset = offset;
      return result >>> 0;
    }
    shift += 7;
  }
  return FALLBACK;
}

export function readLength(bytes: Uint8Array, state: { offset: number }): number | typeof FALLBACK {
  const length = readVarint32(bytes, state);
  if (length === FALLBACK || state.offset + length > bytes.length) return FALLBACK;
  return length;
}

/**
 * An ASCII string field's text; FALLBACK for any other byte, so protobuf-es decides (it rejects
 * invalid UTF-8 and drops a leading byte-order mark, as TextDecoder does).
 */
export function ascii(bytes: Buffer, start: number, end: number): string | typeof FALLBACK {
  for (let index = start; index < end; index++) if (bytes[index]! >= 0x80) return FALLBACK;
  return start === end ? '' : bytes.toString('latin1', start, end);
}

export function decodeMapEntry(
  bytes: Buffer,
  end: number,
  state: { offset: number },
  headers: Record<string, string>,
): boolean {
  let key = '';
  let value = '';
  while (state.offset < end) {
    const tag = bytes[state.offset++]!;
    if (tag !== 0x0a && tag !== 0x12) return false;
    const length = readLength(bytes, state);
    if (length === FALLBACK || state.offset + length > end) return false;
    const text = ascii(bytes, state.offset, state.offset + length);
    if (text === FALLBACK) return false;
    state.offset += length;
    if (tag === 0x0a) key = text;
    else value = text;
  }
  if (key === '__proto__') return false;
  headers[key] = value;
  return true;
}

/**
 * Sizes of a `map<string, string>` field's entries: [keyBytes, valueBytes, entryBytes] per entry, and the field's total
 * bytes.
 */
export function mapFieldSizes(map: Record<string, string>): { total: number; sizes: number[] | undefined } {
  let total = 0;
  let sizes: number[] | undefined;
  for (const key in map) {
    const keyBytes = Buffer.byteLength(key);
    const valueBytes = Buffer.byteLength(map[key]!);
    const entry = stringFieldSize(keyBytes) + stringFieldSize(valueBytes);
    (sizes ??= []).push(keyBytes, valueBytes, entry);
    total += 1 + varintSize(entry) + entry;
  }
  return { total, sizes };
}

/**
 * Writes a `map<string, string>` field (one entry per key, tag byte `tag`) sized by `mapFieldSizes`; returns the next
 * offset.
 */
export function writeMapField(
  out: Buffer,
  offset: number,
  tag: number,
  map: Record<string, string>,
  sizes: number[],
): number {
  let index = 0;
  for (const key in map) {
    const keyBytes = sizes[index++]!;
    const valueBytes = sizes[index++]!;
    out[offset++] = tag;
    offset = writeVarint(out, offset, sizes[index++]!);
    offset = writeString(out, offset, 0x0a, key, keyBytes);
    offset = writeString(out, offset, 0x12, map[key]!, valueBytes);
  }
  return offset;
}

/**
 * Starts a gRPC length-prefixed message of `size` payload bytes (gRPC over HTTP/2 "Length-Prefixed-Message",
 * uncompressed); the payload goes from offset 5.
 */
export function grpcMessageBuffer(size: number): Buffer {
  const out = Buffer.allocUnsafe(5 + size);
  out[0] = 0;
  out.writeUInt32BE(size, 1);
  return out;
}

/** Bytes of a non-empty `bytes` field of `length` bytes (tag, length, data); 0 for an empty one (proto3: omitted). */
export const bytesFieldSize = (length: number) => (length === 0 ? 0 : 1 + varintSize(length) + length);

/** Writes a non-empty `bytes` field (nothing for an empty one); returns the next offset. */
export function writeBytesField(out: Buffer, offset: number, tag: number, bytes: Uint8Array): number {
  if (bytes.length === 0) return offset;
  out[offset++] = tag;
  offset = writeVarint(out, offset, bytes.length);
  out.set(bytes, offset);
  return offset + bytes.length;
}

/** `bytes` as a Buffer over the same memory (no copy). */
export function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
