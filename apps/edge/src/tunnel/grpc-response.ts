/**
 * Ending a gRPC call served on a raw HTTP/2 stream (run-stream-handler.ts, control-stream-handler.ts),
 * as "gRPC over HTTP2" (grpc/grpc PROTOCOL-HTTP2.md) has it: a Trailers-Only response when the
 * call fails before any message was answered, else the status in the trailers after the messages.
 * `grpc-message` is percent-encoded.
 */
import { constants, type Http2ServerResponse } from 'node:http2';
import type { Code } from '@connectrpc/connect';

/** Response headers of a gRPC call that answers messages. */
export const GRPC_RESPONSE_HEADERS = { 'content-type': 'application/grpc', 'grpc-accept-encoding': 'identity' } as const;

/** Fails the call with a Trailers-Only response (nothing sent yet) and stops the client's side too. */
export function trailersOnly(res: Http2ServerResponse, code: Code, message: string): void {
  const stream = res.stream;
  if (stream.destroyed || stream.closed || stream.headersSent) return;
  stream.respond(
    { ':status': 200, 'content-type': 'application/grpc', 'grpc-status': String(code), 'grpc-message': encodeURIComponent(message) },
    { endStream: true },
  );
  // The client may still be writing; stop its side too.
  stream.close(constants.NGHTTP2_NO_ERROR);
}

/**
 * Ends the call with `code` (0 = OK): Trailers-Only when no headers were sent, else the status as
 * trailers after what was written. Does nothing on a stream already gone.
 */
export function endCall(res: Http2ServerResponse, code: Code | 0, message = ''): void {
  if (res.stream.destroyed || res.stream.closed) return;
  if (!res.headersSent) {
    if (code !== 0) {
      trailersOnly(res, code, message);
      return;
    }
    res.writeHead(200, GRPC_RESPONSE_HEADERS);
  }
  if (res.writableEnded) return;
  res.addTrailers(code === 0 ? { 'grpc-status': '0' } : { 'grpc-status': String(code), 'grpc-message': encodeURIComponent(message) });
  res.end();
}
