/**
 * The outcome of a gRPC call the agent makes on a raw HTTP/2 stream (run-call.ts, control-call.ts),
 * as "gRPC over HTTP2" (grpc/grpc PROTOCOL-HTTP2.md) defines it: the `grpc-status` and
 * percent-encoded `grpc-message` of the response headers (Trailers-Only) or trailers; without
 * them, a lost connection (UNAVAILABLE) or the stream's RST_STREAM code.
 */
import type { ClientHttp2Stream, Http2Session } from 'node:http2';
import { Code, ConnectError } from '@connectrpc/connect';

/** HTTP/2 RST_STREAM codes (RFC 9113 §7) as gRPC status codes (PROTOCOL-HTTP2.md "Errors"). */
function codeOfReset(rstCode: number): Code {
  if (rstCode === 8 /* CANCEL */) return Code.Canceled;
  if (rstCode === 7 /* REFUSED_STREAM */) return Code.Unavailable;
  if (rstCode === 11 /* ENHANCE_YOUR_CALM */) return Code.ResourceExhausted;
  return Code.Internal;
}

/** Watches one call's stream for its status (attach right after the request is made). */
export class CallStatus {
  /** The `grpc-status` the edge sent, once it did. */
  status: string | undefined;
  private message = '';
  private streamError: Error | undefined;
  /** The connection of the stream (a destroyed stream forgets it). */
  private readonly session: Http2Session | undefined;

  constructor(private readonly stream: ClientHttp2Stream) {
    this.session = stream.session;
    const read = (headers: Record<string, unknown>) => {
      const value = headers['grpc-status'];
      if (typeof value !== 'string') return;
      this.status = value;
      const text = headers['grpc-message'];
      this.message = typeof text === 'string' ? decodeURIComponent(text) : '';
    };
    stream.on('response', read);
    stream.on('trailers', read);
    stream.on('error', (error: Error) => {
      this.streamError ??= error;
    });
  }

  /** Whether the edge ended the call with OK. */
  get ok(): boolean {
    return this.status === '0';
  }

  /** The call's failure once its stream ended or closed; undefined for OK. */
  error(): ConnectError | undefined {
    if (this.status === '0') return undefined;
    if (this.status !== undefined)
      return new ConnectError(
        this.message || `call failed with grpc-status ${this.status}`,
        Number(this.status) as Code,
      );
    const session = this.session;
    if (session === undefined || session.destroyed || session.closed)
      return new ConnectError('the connection to the edge was lost', Code.Unavailable);
    const rstCode = this.stream.rstCode;
    return new ConnectError(
      this.streamError?.message ?? 'the stream closed without a gRPC status',
      rstCode !== undefined && rstCode !== 0 ? codeOfReset(rstCode) : Code.Internal,
    );
  }
}
