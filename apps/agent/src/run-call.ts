/**
 * The agent's side of `iop.v1.TunnelService/Run` over gRPC, written on a raw HTTP/2 stream of the
 * link's connection to the edge. Run is the tunnel's per-request hot path (one call per run, one
 * message per body slice), so it skips Connect's generic call machinery (async-iterable
 * pipelines, linked abort signals, header conversions), which was about a sixth of the agent's
 * CPU per run; Control (control-call.ts) shares the same HTTP/2 connection (one
 * `Http2SessionManager` per edge: keepalive PINGs, reconnects, GOAWAY handling).
 *
 * Wire behaviour follows "gRPC over HTTP2" (grpc/grpc PROTOCOL-HTTP2.md): a POST with
 * `content-type: application/grpc+proto`, `te: trailers` and the session's `iop-session-id`
 * (which binds the call to the Control session the run was assigned on), each ProviderTunnelFrame as one
 * length-prefixed message; the edge answers with a Trailers-Only response: `grpc-status: 0` once it
 * has the run's END or ERROR frame, or the error (NOT_FOUND, CANCELLED, …).
 *
 * Writes: the first frame (ACCEPTED) leaves with the stream's HEADERS. Later frames are held and
 * leave together in one write (one HTTP/2 DATA frame, one wake-up of the edge): those of a
 * non-stream answer until the end of the event-loop turn they were produced in, so RESPONSE_START,
 * the body, USAGE and END go as one (a body's end is seen ticks after its last bytes); those of an
 * event stream (`text/event-stream`) until the end of the tick, so a token never waits for a
 * loop turn (the stream's USAGE and END then follow in a write of their own).
 *
 * Backpressure: the next frame is pulled from `frames` only once the stream accepted the previous
 * write (below its high-water mark), so HTTP/2 flow control from the edge holds the backend read.
 */
import { once } from 'node:events';
import type { ClientHttp2Stream, OutgoingHttpHeaders } from 'node:http2';
import { Code, ConnectError } from '@connectrpc/connect';
import { ProviderTunnelFrame_Kind as FrameKind, RUN_PATH, RUN_SESSION_HEADER, encodeFrameMessage, type ProviderTunnelFrame } from '@iop/proto';
import { CallStatus } from './grpc-status.js';

/** What a Run call needs of the connection to the edge (`Http2SessionManager` of connect-node). */
export interface RunConnection {
  request(method: string, path: string, headers: OutgoingHttpHeaders, options: object): Promise<ClientHttp2Stream>;
  notifyResponseByteRead(stream: ClientHttp2Stream): void;
}

/**
 * Sends one run's frames on a new Run call and waits for the edge's answer.
 * @param sessionId the `session_id` of the Control session that assigned the run (from Registered).
 * @param onClosedEarly called once if the call ends (edge answer, reset, lost connection) before
 *   every frame was sent: the caller stops the backend at once instead of at its next frame.
 * @throws ConnectError with the gRPC status when the edge answers with an error, resets the
 *   stream or the connection is lost.
 */
export async function sendRun(
  connection: RunConnection,
  sessionId: string,
  frames: AsyncIterable<ProviderTunnelFrame>,
  onClosedEarly: (error: ConnectError) => void,
): Promise<void> {
  const headers: OutgoingHttpHeaders = {
    'content-type': 'application/grpc+proto',
    te: 'trailers',
    'grpc-accept-encoding': 'identity',
    [RUN_SESSION_HEADER]: sessionId,
  };
  const stream = await connection.request('POST', RUN_PATH, headers, {});
  const status = new CallStatus(stream);
  let allSent = false;
  stream.on('data', () => connection.notifyResponseByteRead(stream));
  let settled = false;
  // The call is over once the edge ended its side (trailers: 'end') or the stream closed (reset,
  // lost connection): the edge may answer before the agent sent everything (it cancelled the run).
  const outcome = new Promise<ConnectError | undefined>((resolve) => {
    const settle = () => {
      if (settled) return;
      settled = true;
      const error = status.ok && !allSent ? new ConnectError('the edge ended the run call early', Code.Aborted) : status.error();
      if (!allSent) {
        if (!stream.destroyed) stream.close(8 /* CANCEL */);
        if (error !== undefined) onClosedEarly(error);
      }
      resolve(error);
    };
    stream.once('end', settle);
    stream.once('close', settle);
  });
  let holding = false;
  const release = () => {
    holding = false;
    if (stream.writableCorked > 0) stream.uncork();
  };
  let first = true;
  let eventStream = false;
  try {
    for await (const frame of frames) {
      if (settled || stream.destroyed) break;
      if (first) first = false;
      else if (!holding) {
        holding = true;
        stream.cork();
        if (eventStream && frame.kind === FrameKind.BODY) process.nextTick(release);
        else setImmediate(release);
      }
      if (frame.kind === FrameKind.RESPONSE_START) eventStream = frame.headers['content-type']?.startsWith('text/event-stream') === true;
      const written = stream.write(encodeFrameMessage(frame));
      // The edge answers the call once it has the terminal frame: from here an answer is no early end.
      if (frame.kind === FrameKind.END || frame.kind === FrameKind.ERROR) allSent = true;
      if (!written) await Promise.race([once(stream, 'drain'), outcome]);
    }
    if (!allSent) allSent = !settled && !stream.destroyed;
    if (!stream.writableEnded) stream.end();
  } catch (error) {
    // The frames source failed (a bug): the edge must not wait for more.
    if (!stream.destroyed) stream.close(8 /* CANCEL */);
    throw error;
  }
  const error = await outcome;
  if (error !== undefined) throw error;
}
