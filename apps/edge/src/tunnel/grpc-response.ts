/**
 * Answering a gRPC call served on a raw HTTP/2 stream (run-stream-handler.ts,
 * control-stream-handler.ts), as "gRPC over HTTP2" (grpc/grpc PROTOCOL-HTTP2.md) has it: response
 * headers, length-prefixed messages, then the status in trailers; or a Trailers-Only response
 * when the call fails before any message was answered. `grpc-message` is percent-encoded.
 */
import { constants, type ServerHttp2Stream } from 'node:http2';
import type { Code } from '@connectrpc/connect';

const RESPONSE_HEADERS = {
  ':status': 200,
  'content-type': 'application/grpc',
  'grpc-accept-encoding': 'identity',
} as const;

/** Sends the response headers of a call that answers messages (its status follows as trailers: `endCall`). */
export function respondWithMessages(stream: ServerHttp2Stream): void {
  if (!stream.headersSent && !stream.destroyed) stream.respond(RESPONSE_HEADERS, { waitForTrailers: true });
}

const OK_TRAILERS_ONLY = { ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '0' } as const;

/**
 * Ends a call that answers no message with OK in a Trailers-Only response: one HEADERS frame with
 * END_STREAM. The client's side is left to end by itself (it has nothing more to send).
 */
export function okTrailersOnly(stream: ServerHttp2Stream): void {
  if (stream.destroyed || stream.closed || stream.headersSent) return;
  stream.respond(OK_TRAILERS_ONLY, { endStream: true });
}

/** Fails the call with a Trailers-Only response (nothing sent yet) and stops the client's side too. */
export function trailersOnly(stream: ServerHttp2Stream, code: Code, message: string): void {
  if (stream.destroyed || stream.closed || stream.headersSent) return;
  stream.respond(
    {
      ':status': 200,
      'content-type': 'application/grpc',
      'grpc-status': String(code),
      'grpc-message': encodeURIComponent(message),
    },
    { endStream: true },
  );
  // The client may still be writing; stop its side too.
  stream.close(constants.NGHTTP2_NO_ERROR);
}

/**
 * Ends the call with `code` (0 = OK): Trailers-Only for a failure before any answer, else the
 * status as trailers after what was written. Does nothing on a stream already gone.
 */
export function endCall(stream: ServerHttp2Stream, code: Code | 0, message = ''): void {
  if (stream.destroyed || stream.closed) return;
  if (!stream.headersSent) {
    if (code !== 0) {
      trailersOnly(stream, code, message);
      return;
    }
    respondWithMessages(stream);
  }
  if (stream.writableEnded) return;
  const trailers =
    code === 0 ? { 'grpc-status': '0' } : { 'grpc-status': String(code), 'grpc-message': encodeURIComponent(message) };
  stream.once('wantTrailers', () => {
    if (!stream.destroyed) stream.sendTrailers(trailers);
  });
  stream.end();
}
