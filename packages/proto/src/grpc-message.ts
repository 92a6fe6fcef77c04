/**
 * gRPC message framing for the tunnel's `Run` and `Control` calls, which the edge serves and the
 * agent makes on raw HTTP/2 streams (the per-run hot path: a Run call per run, an assignment per run
 * on Control).
 *
 * `GrpcMessageReader` splits a gRPC request body into its length-prefixed messages (gRPC over
 * HTTP/2, "Length-Prefixed-Message": 1 byte compressed-flag, 4 bytes big-endian length, then the
 * message); `grpcFrame` writes one. Messages may
 * span reads and a read may hold several; a message inside one read is returned as a view of it
 * (no copy), only a message split across reads is joined.
 */
import { TunnelService } from './gen/iop/v1/tunnel_pb.js';

/** HTTP/2 `:path` of the Run call: `/iop.v1.TunnelService/Run` (proto/iop/v1/tunnel.proto). */
export const RUN_PATH = `/${TunnelService.typeName}/${TunnelService.method.run.name}`;

/** HTTP/2 `:path` of the Control call: `/iop.v1.TunnelService/Control`. */
export const CONTROL_PATH = `/${TunnelService.typeName}/${TunnelService.method.control.name}`;

/**
 * gRPC metadata (an HTTP/2 request header) every Run call carries: the `session_id` the edge sent
 * in `Registered` on the agent's Control stream. It binds the call to that session — the edge
 * refuses a Run without it, or for a run assigned to another session — so it is a credential:
 * unguessable, never logged whole.
 */
export const RUN_SESSION_HEADER = 'iop-session-id';

/** A session id as logs and the admin API show it: enough to tell sessions apart, too little to present. */
export function sessionTag(sessionId: string): string {
  return `${sessionId.slice(0, 10)}…`;
}

/**
 * `RunRejected.reason` of a run whose Run call the transport reset before the edge answered it
 * (e.g. an HTTP/2 session refusing the stream): the edge may never have seen the call, so without
 * this it would wait out its accepted timeout. Nothing ran on the backend that matters to the
 * client; the edge retries the run at once (retry-policy.ts).
 */
export const RUN_CALL_RESET_REASON = 'run_call_reset';

/** Largest ProviderTunnelFrame the edge accepts on a Run call, bytes (a BODY slice, a RESPONSE_START). */
export const RUN_MAX_MESSAGE_BYTES = 16 * 1024 * 1024;

export interface GrpcMessage {
  compressed: boolean;
  payload: Uint8Array;
}

/** Largest message accepted, bytes; a larger length prefix is a protocol error. */
export const DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024;

export class GrpcMessageError extends Error {
  override readonly name = 'GrpcMessageError';
}

export class GrpcMessageReader {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  /** Bytes the pending data must reach before it can yield a message (5 while the prefix is incomplete). */
  private neededBytes = 0;

  constructor(private readonly maxMessageBytes = DEFAULT_MAX_MESSAGE_BYTES) {}

  /**
   * Feeds one read; calls `onMessage` for each complete message, in order. Pending reads are
   * joined once, when they hold a whole message (no quadratic re-copying of a large message).
   * @throws GrpcMessageError when a length prefix exceeds the limit.
   */
  push(chunk: Buffer, onMessage: (message: GrpcMessage) => void): void {
    if (this.pendingBytes === 0) {
      this.process(chunk, onMessage);
      return;
    }
    this.pending.push(chunk);
    this.pendingBytes += chunk.length;
    if (this.pendingBytes < this.neededBytes) return;
    const buffer = Buffer.concat(this.pending, this.pendingBytes);
    this.pending = [];
    this.pendingBytes = 0;
    this.process(buffer, onMessage);
  }

  private process(buffer: Buffer, onMessage: (message: GrpcMessage) => void): void {
    let offset = 0;
    while (buffer.length - offset >= 5) {
      const length = buffer.readUInt32BE(offset + 1);
      if (length > this.maxMessageBytes)
        throw new GrpcMessageError(`gRPC message of ${length} bytes exceeds the ${this.maxMessageBytes}-byte limit`);
      if (buffer.length - offset - 5 < length) break;
      onMessage({ compressed: buffer[offset] === 1, payload: buffer.subarray(offset + 5, offset + 5 + length) });
      offset += 5 + length;
    }
    if (offset < buffer.length) {
      const rest = buffer.subarray(offset);
      this.pending.push(rest);
      this.pendingBytes = rest.length;
      this.neededBytes = rest.length >= 5 ? 5 + rest.readUInt32BE(1) : 5;
    }
  }

  /** Bytes of an incomplete message still waiting for more input. */
  get bufferedBytes(): number {
    return this.pendingBytes;
  }
}

/** Frames one message (uncompressed). */
export function grpcFrame(payload: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(5 + payload.length);
  out[0] = 0;
  out.writeUInt32BE(payload.length, 1);
  out.set(payload, 5);
  return out;
}
