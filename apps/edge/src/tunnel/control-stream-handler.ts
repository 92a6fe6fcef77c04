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
 * in one tick leave in one socket write; a large one (over `WRITE_SLICE_BYTES`) in slices, each
 * once the last has left; a slow agent holds the writes (drain), and its messages are read no
 * faster than the call consumes them (HTTP/2 flow control).
 */
import type { IncomingHttpHeaders, ServerHttp2Stream } from 'node:http2';
import { fromBinary } from '@bufbuild/protobuf';
import { Code, ConnectError } from '@connectrpc/connect';
import { AsyncQueue } from '@iop/core';
import {
  AgentMessageSchema,
  CONTROL_PATH,
  GrpcMessageError,
  GrpcMessageReader,
  encodeEdgeMessageParts,
  type AgentMessage,
  type EdgeMessage,
  type GrpcMessage,
} from '@iop/proto';
import { endCall, respondWithMessages } from './grpc-response.js';
import type { ControlHandler } from './tunnel-service.js';

/** Agent messages read ahead of the call's logic before the stream is paused. */
const READ_AHEAD_MESSAGES = 64;

/**
 * A message larger than this (an assignment with a large request body) is written in slices of
 * this size, each once the previous one has left (HTTP/2 flow control lets it through), never
 * whole: Node counts a stream's unsent bytes in its session's memory (`maxSessionMemory`), and a
 * 30 MB assignment written at once made the session refuse the agent's next stream — the run's own
 * Run call — with ENHANCE_YOUR_CALM. The body is not copied into the message: it is written from
 * the request's bytes (`encodeEdgeMessageParts`), in slices that are views of them.
 */
export const WRITE_SLICE_BYTES = 1024 * 1024;

/** Writes `parts` slice by slice, each after the previous one completed; false when the stream closed first. */
async function writeSliced(
  stream: ServerHttp2Stream,
  parts: readonly Buffer[],
  closed: Promise<unknown>,
): Promise<boolean> {
  stream.uncork(); // the slices leave now, not with the rest of the tick's messages
  for (const bytes of parts) {
    for (let offset = 0; offset < bytes.length; offset += WRITE_SLICE_BYTES) {
      if (stream.destroyed) return false;
      const slice = bytes.subarray(offset, offset + WRITE_SLICE_BYTES);
      const written = new Promise<boolean>((resolve) =>
        stream.write(slice, (error) => resolve(error === undefined || error === null)),
      );
      if (!(await Promise.race([written, closed.then(() => false)]))) return false;
    }
  }
  return true;
}

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
      finish(
        error instanceof GrpcMessageError ? Code.ResourceExhausted : Code.Internal,
        error instanceof Error ? error.message : 'bad message',
      );
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
      // A large assignment in parts: its body is written from the request's own bytes, not copied.
      const parts = encodeEdgeMessageParts(message, WRITE_SLICE_BYTES);
      // Never-rejecting waits: `events.once` rejects when the stream emits 'error' (the agent's
      // session closed with GOAWAY), and a rejection nobody awaits any more ended the process.
      closed ??= new Promise((resolve) => stream.once('close', resolve));
      if (parts.length > 1) {
        if (!(await writeSliced(stream, parts, closed))) break;
      } else if (!stream.write(parts[0]))
        await Promise.race([new Promise((resolve) => stream.once('drain', resolve)), closed]);
    }
    finish(0);
  } catch (error) {
    // ConnectErrors carry the call's status; anything else is a bug, not the agent's to read.
    if (error instanceof ConnectError) finish(error.code, error.rawMessage);
    else finish(Code.Internal, 'internal error');
  }
}
