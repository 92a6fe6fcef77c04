/**
 * `RunCall` against a plain node:http2 server playing the edge's side of `Run`, so each answer
 * of the gRPC over HTTP/2 protocol (PROTOCOL-HTTP2.md) can be produced exactly: success with
 * trailers or Trailers-Only, Trailers-Only errors, RST_STREAM, a lost connection.
 */
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { Code, ConnectError } from '@connectrpc/connect';
import { Http2SessionManager } from '@connectrpc/connect-node';
import {
  GrpcMessageReader,
  ProviderTunnelFrameSchema,
  ProviderTunnelFrame_Kind as Kind,
  RUN_PATH,
  RUN_SESSION_HEADER,
  RunSummarySchema,
  grpcFrame,
  type ProviderTunnelFrame,
} from '@iop/proto';
import { RunCall, type RunConnection } from '../../src/run-call';
import { sleep } from '@iop/core';

type Handler = (
  stream: http2.ServerHttp2Stream,
  headers: http2.IncomingHttpHeaders,
  frames: ProviderTunnelFrame[],
) => void;

let server: http2.Http2Server;
let connection: Http2SessionManager;
let handler: Handler;

beforeEach(async () => {
  server = http2.createServer();
  server.on('stream', (stream, headers) => {
    stream.on('error', () => undefined); // resets by the client are part of these tests
    handler(stream, headers, []);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  connection = new Http2SessionManager(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
});

afterEach(async () => {
  connection.abort();
  await new Promise((resolve) => server.close(resolve));
});

/** Reads the request's frames as they arrive. */
function readFrames(
  stream: http2.ServerHttp2Stream,
  frames: ProviderTunnelFrame[],
  onFrame?: (frame: ProviderTunnelFrame) => void,
): void {
  const reader = new GrpcMessageReader();
  stream.on('data', (chunk: Buffer) =>
    reader.push(chunk, (message) => {
      const frame = fromBinary(ProviderTunnelFrameSchema, message.payload);
      frames.push(frame);
      onFrame?.(frame);
    }),
  );
}

const frame = (kind: Kind, body = ''): ProviderTunnelFrame =>
  create(ProviderTunnelFrameSchema, { runId: 'run_1', kind, body: Buffer.from(body) });

/**
 * Drives a Run call as the relay does: each frame pushed as the source produces it, the next one
 * produced only once a full stream drained; then the call is ended and its answer awaited.
 */
async function sendRun(
  connection: RunConnection,
  sessionId: string,
  frames: AsyncIterable<ProviderTunnelFrame>,
  onClosedEarly: (error: ConnectError) => void,
): Promise<void> {
  const call = await RunCall.open(connection, sessionId, onClosedEarly);
  for await (const item of frames) {
    const full = call.push(item);
    if (full !== undefined) await full;
  }
  await call.end();
}

async function* framesOf(list: ProviderTunnelFrame[]): AsyncGenerator<ProviderTunnelFrame> {
  for (const item of list) yield item;
}

/**
 * An edge that records each DATA frame's size (Node emits one 'data' per DATA frame) and the frames, and answers OK at
 * the end of stream.
 */
function countingDataFrames(): { chunks: number[]; received: ProviderTunnelFrame[] } {
  const chunks: number[] = [];
  const received: ProviderTunnelFrame[] = [];
  handler = (stream) => {
    stream.on('data', (chunk: Buffer) => chunks.push(chunk.length));
    readFrames(stream, received);
    stream.on('end', () =>
      stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '0' }, { endStream: true }),
    );
  };
  return { chunks, received };
}

describe('RunCall', () => {
  test('the edge answering OK as soon as END is in, before the end of stream, is no early end', async () => {
    const received: ProviderTunnelFrame[] = [];
    handler = (stream) =>
      readFrames(stream, received, (item) => {
        if (item.kind === Kind.END)
          stream.respond(
            { ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '0' },
            { endStream: true },
          );
      });
    const early = jest.fn();
    await sendRun(
      connection,
      'ses_test',
      framesOf([frame(Kind.ACCEPTED), frame(Kind.RESPONSE_START), frame(Kind.END)]),
      early,
    );
    expect(received.map((item) => item.kind)).toEqual([Kind.ACCEPTED, Kind.RESPONSE_START, Kind.END]);
    expect(early).not.toHaveBeenCalled();
  });

  test('the first frame leaves with the HEADERS; frames of one turn after it leave in one DATA frame that ends the stream', async () => {
    const { chunks, received } = countingDataFrames();
    let backendAnswered: (() => void) | undefined;
    const answered = new Promise<void>((resolve) => (backendAnswered = resolve));
    async function* frames(): AsyncGenerator<ProviderTunnelFrame> {
      yield frame(Kind.ACCEPTED);
      setTimeout(backendAnswered!, 20);
      await answered; // the backend's whole non-stream answer arrives at once
      yield frame(Kind.RESPONSE_START);
      yield frame(Kind.BODY, '{"id":"chatcmpl-1"}');
      await Promise.resolve(); // the body's end comes ticks later
      await new Promise((resolve) => process.nextTick(resolve));
      yield frame(Kind.USAGE);
      yield frame(Kind.END);
    }
    await sendRun(connection, 'ses_test', frames(), jest.fn());
    expect(received.map((item) => item.kind)).toEqual([
      Kind.ACCEPTED,
      Kind.RESPONSE_START,
      Kind.BODY,
      Kind.USAGE,
      Kind.END,
    ]);
    // One DATA frame each: ACCEPTED alone, then the four others together (Node emits one 'data' per DATA frame).
    expect(chunks).toHaveLength(2);
  });

  test('frames given to open leave with the HEADERS in one DATA frame, ACCEPTED first, and end the call', async () => {
    const { chunks, received } = countingDataFrames();
    const call = await RunCall.open(connection, 'ses_test', jest.fn(), [
      frame(Kind.ACCEPTED),
      frame(Kind.RESPONSE_START),
      frame(Kind.BODY, '{"id":"chatcmpl-1"}'),
      frame(Kind.USAGE),
      frame(Kind.END),
    ]);
    await call.end();
    expect(received.map((item) => item.kind)).toEqual([
      Kind.ACCEPTED,
      Kind.RESPONSE_START,
      Kind.BODY,
      Kind.USAGE,
      Kind.END,
    ]);
    expect(received[2]!.body.toString()).toBe('{"id":"chatcmpl-1"}');
    expect(chunks).toHaveLength(1);
  });

  test('a token of an event stream leaves at the end of its tick, never held for the turn', async () => {
    const { chunks, received } = countingDataFrames();
    const sse = (): ProviderTunnelFrame =>
      create(ProviderTunnelFrameSchema, {
        runId: 'run_1',
        kind: Kind.RESPONSE_START,
        status: 200,
        headers: { 'content-type': 'text/event-stream; charset=utf-8' },
      });
    async function* frames(): AsyncGenerator<ProviderTunnelFrame> {
      yield frame(Kind.ACCEPTED);
      await sleep(10);
      yield sse();
      yield frame(Kind.BODY, 'data: {"a":1}\n\n');
      await sleep(10);
      yield frame(Kind.BODY, 'data: [DONE]\n\n');
      await new Promise((resolve) => process.nextTick(resolve)); // the body's end, ticks later
      yield frame(Kind.USAGE);
      yield frame(Kind.END);
    }
    await sendRun(connection, 'ses_test', frames(), jest.fn());
    expect(received.map((item) => item.kind)).toEqual([
      Kind.ACCEPTED,
      Kind.RESPONSE_START,
      Kind.BODY,
      Kind.BODY,
      Kind.USAGE,
      Kind.END,
    ]);
    // ACCEPTED; RESPONSE_START with the first token (one turn); the last token alone; USAGE with END.
    expect(chunks).toHaveLength(4);
  });

  test('sends each frame as one length-prefixed message with gRPC headers; resolves on grpc-status 0', async () => {
    const received: ProviderTunnelFrame[] = [];
    let requestHeaders: http2.IncomingHttpHeaders = {};
    handler = (stream, headers) => {
      requestHeaders = headers;
      readFrames(stream, received);
      stream.on('end', () => {
        stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
        stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
        stream.end(grpcFrame(toBinary(RunSummarySchema, create(RunSummarySchema, {}))));
      });
    };
    const early = jest.fn();
    await sendRun(
      connection,
      'ses_test',
      framesOf([frame(Kind.RESPONSE_START), frame(Kind.BODY, 'data: {"x":1}\n\n'), frame(Kind.END)]),
      early,
    );
    expect(requestHeaders[':path']).toBe(RUN_PATH);
    expect(requestHeaders[':method']).toBe('POST');
    expect(requestHeaders['content-type']).toBe('application/grpc+proto');
    expect(requestHeaders.te).toBe('trailers');
    expect(requestHeaders[RUN_SESSION_HEADER]).toBe('ses_test');
    expect(received.map((item) => item.kind)).toEqual([Kind.RESPONSE_START, Kind.BODY, Kind.END]);
    expect(Buffer.from(received[1]!.body).toString()).toBe('data: {"x":1}\n\n');
    expect(early).not.toHaveBeenCalled();
  });

  test('a Trailers-Only CANCELLED while the run still produces frames stops it at once, with the status', async () => {
    handler = (stream, _headers, frames) =>
      readFrames(stream, frames, () => {
        if (frames.length === 2)
          stream.respond(
            {
              ':status': 200,
              'content-type': 'application/grpc',
              'grpc-status': String(Code.Canceled),
              'grpc-message': encodeURIComponent('run cancelled by the edge'),
            },
            { endStream: true },
          );
      });
    let pulledAfterCancel = false;
    let closed: (() => void) | undefined;
    const cancelled = new Promise<void>((resolve) => (closed = resolve));
    async function* frames(): AsyncGenerator<ProviderTunnelFrame> {
      yield frame(Kind.RESPONSE_START);
      yield frame(Kind.BODY, 'a');
      await cancelled; // a backend waiting for its next token
      pulledAfterCancel = true;
      yield frame(Kind.BODY, 'b');
    }
    const early = jest.fn((_error: ConnectError) => closed!());
    const error = (await sendRun(connection, 'ses_test', frames(), early).catch(
      (caught: unknown) => caught,
    )) as ConnectError;
    expect(error).toBeInstanceOf(ConnectError);
    expect(error.code).toBe(Code.Canceled);
    expect(error.rawMessage).toBe('run cancelled by the edge');
    expect(early).toHaveBeenCalledTimes(1);
    expect(pulledAfterCancel).toBe(true); // resumed once, then the loop stopped writing
  });

  /** A run waiting on its backend until `onClosedEarly` stops it (as RunExecution's cancel does). */
  function waitingRun(): { frames: AsyncGenerator<ProviderTunnelFrame>; early: jest.Mock } {
    let stop: (() => void) | undefined;
    const stopped = new Promise<void>((resolve) => (stop = resolve));
    const early = jest.fn(() => stop!());
    async function* frames(): AsyncGenerator<ProviderTunnelFrame> {
      yield frame(Kind.RESPONSE_START);
      await stopped;
      yield frame(Kind.ERROR);
    }
    return { frames: frames(), early };
  }

  test('RST_STREAM CANCEL from the edge is Code.Canceled', async () => {
    handler = (stream) => stream.close(http2.constants.NGHTTP2_CANCEL);
    const { frames, early } = waitingRun();
    const reset = (await sendRun(connection, 'ses_test', frames, early).catch(
      (caught: unknown) => caught,
    )) as ConnectError;
    expect(reset.code).toBe(Code.Canceled);
    expect(early).toHaveBeenCalledTimes(1);
  }, 5_000);

  test('a lost connection is Code.Unavailable', async () => {
    handler = (stream) => stream.session?.destroy();
    const { frames, early } = waitingRun();
    const lost = (await sendRun(connection, 'ses_test', frames, early).catch(
      (caught: unknown) => caught,
    )) as ConnectError;
    expect(lost.code).toBe(Code.Unavailable);
    expect(lost.rawMessage).toBe('the connection to the edge was lost');
    expect(early).toHaveBeenCalledTimes(1);
  }, 5_000);

  test('backpressure: an edge that stops reading stops the pulls once the stream buffer is full', async () => {
    handler = (stream) => stream.pause();
    let pulls = 0;
    const slice = 'x'.repeat(8 * 1024);
    async function* frames(): AsyncGenerator<ProviderTunnelFrame> {
      // 800 KiB in all: far beyond what the windows and the write buffer take without the edge reading.
      for (let index = 0; index < 100; index++) {
        pulls++;
        yield frame(Kind.BODY, slice);
      }
    }
    void sendRun(connection, 'ses_test', frames(), () => undefined).catch(() => undefined);
    // Wait until the pulls stop (unchanged over 200 ms); a source without backpressure never stops.
    let last = -1;
    let still = 0;
    for (const deadline = Date.now() + 5_000; still < 4 && Date.now() < deadline;) {
      await sleep(50);
      still = pulls === last ? still + 1 : 0;
      last = pulls;
    }
    expect(still).toBe(4);
    // HTTP/2 windows (64 KiB stream, connection) plus the 16 KiB write buffer: a bounded number of 8 KiB slices.
    expect(pulls * slice.length).toBeLessThan(256 * 1024);
  });
});
