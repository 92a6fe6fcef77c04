/**
 * The agent's side of `iop.v1.TunnelService/Control` over gRPC, on a raw HTTP/2 stream of the
 * link's connection to the edge (the one its Run calls use). Control carries one RunAssignment per
 * run, so, like Run (run-call.ts), it skips Connect's generic call machinery (async-iterable
 * pipelines, linked abort signals, reflective parsing): about 12 % of the agent's CPU per run.
 * Assignments are decoded by assignment-codec.ts; the agent's own messages (Register, Heartbeat,
 * RunRejected) are rare and encoded with protobuf-es.
 *
 * Wire behaviour follows "gRPC over HTTP2" (grpc/grpc PROTOCOL-HTTP2.md): a POST with
 * `content-type: application/grpc+proto` and `te: trailers`, length-prefixed AgentMessages out,
 * length-prefixed EdgeMessages in, the status in the trailers (or a Trailers-Only response).
 * Messages queued in one tick leave in one socket write.
 */
import { once } from 'node:events';
import { toBinary } from '@bufbuild/protobuf';
import { Code, ConnectError } from '@connectrpc/connect';
import { AsyncQueue } from '@iop/core';
import {
  AgentMessageSchema,
  CONTROL_PATH,
  GrpcMessageError,
  GrpcMessageReader,
  decodeEdgeMessage,
  grpcFrame,
  type AgentMessage,
  type EdgeMessage,
  type GrpcMessage,
} from '@iop/proto';
import { CallStatus } from './grpc-status.js';
import type { RunConnection } from './run-call.js';

/** Largest EdgeMessage read: the largest length a gRPC message prefix can hold (connect-node's default read limit). */
const CONTROL_MAX_MESSAGE_BYTES = 0xffff_ffff;

const HEADERS = { 'content-type': 'application/grpc+proto', te: 'trailers', 'grpc-accept-encoding': 'identity' };

/**
 * Opens a Control call: sends `outgoing` (the call's request side ends when it does) and yields
 * the edge's messages until the edge ends the call.
 * @throws ConnectError with the call's gRPC status when the edge fails it (e.g. UNAUTHENTICATED
 *   for a wrong join token), resets it or the connection is lost; `signal`'s reason once aborted.
 */
export async function* controlCall(
  connection: RunConnection,
  outgoing: AsyncIterable<AgentMessage>,
  signal: AbortSignal,
): AsyncGenerator<EdgeMessage, void> {
  signal.throwIfAborted();
  const stream = await connection.request('POST', CONTROL_PATH, HEADERS, {});
  const status = new CallStatus(stream);
  const incoming = new AsyncQueue<EdgeMessage>(Number.POSITIVE_INFINITY);
  // Assignments carry whole request bodies: the edge bounds them (its maxBodyBytes, up to 1 GiB,
  // and a stored Responses conversation on top), so the agent takes any length a prefix can give.
  const reader = new GrpcMessageReader(CONTROL_MAX_MESSAGE_BYTES);
  const fail = (error: unknown) => {
    incoming.fail(error);
    if (!stream.destroyed) stream.close(8 /* CANCEL */);
  };
  const onMessage = (message: GrpcMessage) => {
    if (message.compressed) return fail(new ConnectError('the edge sent a compressed message', Code.Internal));
    try {
      incoming.push(decodeEdgeMessage(message.payload));
    } catch {
      fail(new ConnectError('a Control message does not decode as iop.v1.EdgeMessage', Code.Internal));
    }
  };
  stream.on('data', (chunk: Buffer) => {
    connection.notifyResponseByteRead(stream);
    try {
      reader.push(chunk, onMessage);
    } catch (error) {
      fail(
        new ConnectError(
          error instanceof Error ? error.message : 'bad message',
          error instanceof GrpcMessageError ? Code.ResourceExhausted : Code.Internal,
        ),
      );
    }
  });
  const settle = () => {
    const error = status.error();
    if (error === undefined) incoming.close();
    else incoming.fail(error);
  };
  stream.once('end', settle);
  stream.once('close', settle);
  const onAbort = () => fail(signal.reason);
  signal.addEventListener('abort', onAbort, { once: true });
  void send(stream, outgoing);
  try {
    yield* incoming;
  } finally {
    signal.removeEventListener('abort', onAbort);
    if (!stream.destroyed) stream.close(8 /* CANCEL */);
  }
}

/** Writes the agent's messages until `outgoing` ends, then ends the request side. */
async function send(
  stream: Awaited<ReturnType<RunConnection['request']>>,
  outgoing: AsyncIterable<AgentMessage>,
): Promise<void> {
  const uncork = () => stream.uncork();
  const closed = once(stream, 'close').catch(() => undefined);
  try {
    for await (const message of outgoing) {
      if (stream.destroyed) return;
      if (stream.writableCorked === 0) {
        stream.cork();
        process.nextTick(uncork);
      }
      if (!stream.write(grpcFrame(toBinary(AgentMessageSchema, message))))
        await Promise.race([once(stream, 'drain'), closed]);
    }
    if (!stream.destroyed && !stream.writableEnded) stream.end();
  } catch {
    // The stream failed under the write: the read side reports the call's outcome.
  }
}
