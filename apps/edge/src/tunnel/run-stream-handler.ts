/**
 * The edge's handler for `iop.v1.TunnelService/Run` over the gRPC protocol. Run is the per-request hot path of the
 * tunnel (one call per run, one message per body slice), so it skips the generic Connect call machinery (async-iterable
 * pipelines, linked abort signals, header conversions); Control over gRPC has a handler of the same kind
 * (control-stream-handler.ts); connect-node serves every other request on the port (a Run in the Connect or gRPC-Web
 * protocol is UNIMPLEMENTED there).
 *
 * Wire behaviour follows "gRPC over HTTP2" (grpc/grpc PROTOCOL-HTTP2.md): request messages are length-prefixed
 * ProviderTunnelFrames; the answer is a Trailers-Only response (one HEADERS frame, proto/iop/v1/tunnel.proto):
 * `grpc-status: 0` as soon as the run's END or ERROR frame is in (the agent's end of stream follows; waiting for it
 * would cost both sides a wake-up), or the error: UNAUTHENTICATED (before any body is read) without the
 * `iop-session-id` of a connected Control session, NOT_FOUND for an unknown or finished run or one assigned to another
 * session, CANCELLED when the edge dropped the run (its agent then aborts the backend request), UNIMPLEMENTED for a
 * compressed message, RESOURCE_EXHAUSTED for a message over `RUN_MAX_MESSAGE_BYTES`, INTERNAL for a frame that does not
 * decode or a stream that ends inside a message. Backpressure: while the run's consumer is behind, the stream is
 * paused, so HTTP/2 flow control holds the agent (and through it the backend).
 */
import type { TunnelCounters } from '../edge-observers.js';
import type { IncomingHttpHeaders, ServerHttp2Stream } from 'node:http2';
import { Code } from '@connectrpc/connect';
import {
  GrpcMessageError,
  GrpcMessageReader,
  RUN_MAX_MESSAGE_BYTES,
  type GrpcMessage,
  RUN_PATH,
  RUN_SESSION_HEADER,
  RunErrorCode,
  decodeFrame,
  type ProviderTunnelFrame,
} from '@iop/proto';
import type { AgentSession } from './agent-session.js';
import { okTrailersOnly, trailersOnly } from './grpc-response.js';
import type { RunHandle, RunRegistry } from './run-registry.js';

/** True for a gRPC (not Connect, not gRPC-Web) request that this handler can serve. */
export function isGrpcRun(path: string | undefined, headers: IncomingHttpHeaders): boolean {
  const contentType = headers['content-type'];
  return path === RUN_PATH && (contentType === 'application/grpc' || contentType === 'application/grpc+proto');
}

/**
 * Serves one Run call.
 * @param sessionOf the connected Control session with this id, if any (AgentRegistry.bySessionId).
 */
export function handleRunStream(
  stream: ServerHttp2Stream,
  headers: IncomingHttpHeaders,
  runs: RunRegistry,
  sessionOf: (sessionId: string) => AgentSession | undefined,
  counters?: TunnelCounters,
): void {
  const sessionId = headers[RUN_SESSION_HEADER];
  const session = typeof sessionId === 'string' ? sessionOf(sessionId) : undefined;
  if (session === undefined) {
    trailersOnly(
      stream,
      Code.Unauthenticated,
      `a Run call needs the ${RUN_SESSION_HEADER} of a connected Control session`,
    );
    return;
  }
  const reader = new GrpcMessageReader(RUN_MAX_MESSAGE_BYTES);
  let handle: RunHandle | undefined;
  let done = false;
  const finish = (code: Code | undefined, message = '') => {
    if (done) return;
    done = true;
    stream.removeListener('data', onData);
    stream.resume();
    if (code === undefined) okTrailersOnly(stream);
    else trailersOnly(stream, code, message);
  };

  const onFrame = (frame: ProviderTunnelFrame): Promise<void> | undefined => {
    if (handle === undefined) {
      // The edge gives up on the run while the agent waits on its backend: end the call then, not at its next frame.
      handle = runs.attach(frame.runId, session, () => finish(Code.Canceled, 'run cancelled by the edge'));
      if (handle === undefined) {
        finish(Code.NotFound, `unknown or finished run ${frame.runId}`);
        return undefined;
      }
    }
    if (handle.isFinished) {
      finish(Code.Canceled, 'run cancelled by the edge');
      return undefined;
    }
    const pending = handle.deliver(frame);
    // END or ERROR finished the run: the call is answered now.
    if (handle.isFinished) finish(undefined);
    return pending;
  };

  // One read may hold several frames; the stream resumes once the consumer took all of them.
  // The callbacks are made once per run, not per read (the relay path allocates nothing per chunk
  // beyond the decoded frame).
  let wait: Promise<void> | undefined;
  let waits: Array<Promise<void>> | undefined;
  const onMessage = (message: GrpcMessage) => {
    if (done) return;
    if (message.compressed) {
      finish(Code.Unimplemented, 'compressed messages are not accepted; send identity');
      return;
    }
    const frame = decodeFrame(message.payload);
    if (counters !== undefined) counters.frames[frame.kind] = (counters.frames[frame.kind] ?? 0) + 1;
    const pending = onFrame(frame);
    if (pending === undefined) return;
    if (wait === undefined) wait = pending;
    else (waits ??= [wait]).push(pending);
  };
  const resume = () => {
    if (!done) stream.resume();
  };
  const onData = (chunk: Buffer) => {
    if (counters !== undefined) counters.bytes += chunk.length;
    try {
      reader.push(chunk, onMessage);
    } catch (error) {
      finish(
        error instanceof GrpcMessageError ? Code.ResourceExhausted : Code.Internal,
        error instanceof Error ? error.message : 'bad frame',
      );
      return;
    }
    if (wait !== undefined && !done) {
      stream.pause();
      void (waits === undefined ? wait : Promise.all(waits)).then(resume);
    }
    wait = undefined;
    waits = undefined;
  };
  stream.on('data', onData);
  stream.on('end', () => {
    const truncated = reader.bufferedBytes > 0;
    // The agent ended its side: its run is over, nothing to cancel.
    if (handle !== undefined && !handle.isFinished)
      handle.failWith(
        RunErrorCode.AGENT_DISCONNECTED,
        truncated ? 'the run stream ended inside a message' : 'the run stream ended without END',
        true,
      );
    if (truncated) finish(Code.Internal, `the stream ended inside a message (${reader.bufferedBytes} bytes of it)`);
    else finish(undefined);
  });
  const onGone = () => {
    // The stream is gone: nothing may be answered on it (the cancel this failure sends goes on Control).
    done = true;
    if (handle !== undefined && !handle.isFinished)
      handle.failWith(RunErrorCode.AGENT_DISCONNECTED, 'the run stream was reset');
  };
  stream.on('aborted', onGone);
  stream.on('error', onGone);
  stream.on('close', onGone);
}
