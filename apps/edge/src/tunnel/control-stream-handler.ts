/**
 * The edge's handler for `iop.v1.TunnelService/Control` over the gRPC protocol, on the raw HTTP/2
 * stream. Control carries one RunAssignment per run, so, like Run (run-stream-handler.ts), it skips
 * Connect's generic call machinery (async-iterable pipelines, reflective serialization): about 8 %
 * of the edge's CPU per run. The call's logic is tunnel-service.ts's `controlHandler`, shared with
 * the connect-node route that serves Control in the Connect and gRPC-Web protocols.
 *
 * Wire behaviour follows "gRPC over HTTP2" (grpc/grpc PROTOCOL-HTTP2.md): length-prefixed
 * AgentMessages in, length-prefixed EdgeMessages out (assignments encoded by
 * assignment-codec.ts), the status in the trailers, or a Trailers-Only response when the call
 * fails before the first answer (UNAUTHENTICATED for a bad join token, INVALID_ARGUMENT without
 * Register, DEADLINE_EXCEEDED when Register is late, ALREADY_EXISTS for a live agent id).
 * UNIMPLEMENTED for a compressed message, RESOURCE_EXHAUSTED for one over `maxMessageBytes`,
 * INTERNAL for one that does not decode or a stream that ends inside a message. Messages written
 * in one tick leave in one socket write; a slow agent holds the writes (drain), and its
 * messages are read no faster than the call consumes them (HTTP/2 flow control).
 */
import { once } from 'node:events';
import type { IncomingHttpHeaders, ServerHttp2Stream } from 'node:http2';
import { fromBinary } from '@bufbuild/protobuf';
import { Code, ConnectError } from '@connectrpc/connect';
import { AsyncQueue } from '@iop/core';
import {
  AgentMessageSchema,
  CONTROL_PATH,
  GrpcMessageError,
  GrpcMessageReader,
  encodeEdgeMessage,
  type AgentMessage,
  type EdgeMessage,
  type GrpcMessage,
} from '@iop/proto';
import { endCall, respondWithMessages } from './grpc-response.js';
import type { ControlHandler } from './tunnel-service.js';

/** Agent messages read ahead of the call's logic before the stream is paused. */
const READ_AHEAD_MESSAGES = 64;

/** True for a gRPC (not Connect, not gRPC-Web) Control call. */
export function isGrpcControl(path: string | undefined, headers: IncomingHttpHeaders): boolean {
  const contentType = headers['content-type'];
  return path === CONTROL_PATH && (contentType === 'application/grpc' || contentType === 'application/grpc+proto');
}

/**
 * Serves one Control call until the agent or the edge ends it.
 * @param maxMessageBytes largest AgentMessage accepted, bytes.
 */
export function handleControlStream(stream: ServerHttp2Stream, control: ControlHandler, maxMessageBytes: number): void {
  const abort = new AbortController();
  const requests = new AsyncQueue<AgentMessage>(READ_AHEAD_MESSAGES);
  const reader = new GrpcMessageReader(maxMessageBytes);
  let ended = false;
  const finish = (code: Code | 0, message = '') => {
    if (ended) return;
    ended = true;
    stream.removeListener('data', onData);
    stream.resume();
    endCall(stream, code, message);
    abort.abort(new Error('the Control call ended'));
    requests.close();
  };

  const resume = () => {
    if (!ended) stream.resume();
  };
  const onMessage = (message: GrpcMessage) => {
    if (ended) return;
    if (message.compressed) return finish(Code.Unimplemented, 'compressed messages are not accepted; send identity');
    let decoded: AgentMessage;
    try {
      decoded = fromBinary(AgentMessageSchema, message.payload);
    } catch {
      return finish(Code.Internal, 'a Control message does not decode as iop.v1.AgentMessage');
    }
    const full = requests.push(decoded);
    if (full !== undefined) {
      stream.pause();
      void full.then(resume);
    }
  };
  const onData = (chunk: Buffer) => {
    try {
      reader.push(chunk, onMessage);
    } catch (error) {
      finish(error instanceof GrpcMessageError ? Code.ResourceExhausted : Code.Internal, error instanceof Error ? error.message : 'bad message');
    }
  };
  stream.on('data', onData);
  stream.on('end', () => {
    if (reader.bufferedBytes > 0) {
      const message = `the stream ended inside a message (${reader.bufferedBytes} bytes of it)`;
      requests.fail(new ConnectError(message, Code.Internal));
      finish(Code.Internal, message);
    } else requests.close();
  });
  const onGone = () => {
    // Nothing can be answered any more: the call's logic ends the session (its abort listener).
    ended = true;
    abort.abort(new Error('the Control stream was reset'));
    requests.close();
  };
  stream.on('aborted', onGone);
  stream.on('error', onGone);
  stream.on('close', onGone);
  void answer(stream, control(requests, { signal: abort.signal, connection: stream.session }), () => ended, finish);
}

/** Writes the call's answers as they come, then its status. */
async function answer(
  stream: ServerHttp2Stream,
  messages: AsyncIterable<EdgeMessage>,
  isEnded: () => boolean,
  finish: (code: Code | 0, message?: string) => void,
): Promise<void> {
  const uncork = () => stream.uncork();
  let closed: Promise<unknown> | undefined;
  try {
    for await (const message of messages) {
      if (isEnded() || stream.destroyed) break;
      respondWithMessages(stream);
      if (stream.writableCorked === 0) {
        stream.cork();
        process.nextTick(uncork);
      }
      if (!stream.write(encodeEdgeMessage(message))) await Promise.race([once(stream, 'drain'), (closed ??= once(stream, 'close'))]);
    }
    finish(0);
  } catch (error) {
    // ConnectErrors carry the call's status; anything else is a bug, not the agent's to read.
    if (error instanceof ConnectError) finish(error.code, error.rawMessage);
    else finish(Code.Internal, 'internal error');
  }
}
