/**
 * The Control call in each protocol the edge serves it in, against a real edge:
 * - gRPC on the raw HTTP/2 handler (what iop agents and @grpc/grpc-js speak: tunnel-grpc-js.test.ts
 *   covers a whole run): malformed calls end with the gRPC status "gRPC over HTTP2"
 *   (grpc/grpc PROTOCOL-HTTP2.md) gives them, in a Trailers-Only response, and the edge stays up;
 * - the Connect protocol (connect-node's route, same call logic): an agent registers and is
 *   refused for a wrong join token the same way.
 */
import http2 from 'node:http2';
import { create, toBinary, type MessageInitShape } from '@bufbuild/protobuf';
import { Code, ConnectError, createClient } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { AgentMessageSchema, CONTROL_PATH, TunnelService, grpcFrame, type AgentMessage } from '@iop/proto';
import { JOIN_TOKEN, startEdge, stopAll, type EdgeHandle } from './harness';

let edge: EdgeHandle;

beforeAll(async () => {
  edge = await startEdge();
});

afterAll(async () => {
  await stopAll();
});

interface CallEnd {
  status: string | undefined;
  message: string | undefined;
  /** Whether the status came in the response headers (Trailers-Only) rather than in trailers. */
  trailersOnly: boolean;
}

/** Sends `body` on a raw gRPC Control call and waits for its status. */
async function rawControl(body: Buffer): Promise<CallEnd> {
  const session = http2.connect(`http://127.0.0.1:${edge.tunnelPort}`);
  session.on('error', () => undefined);
  try {
    const stream = session.request({
      ':method': 'POST',
      ':path': CONTROL_PATH,
      'content-type': 'application/grpc',
      te: 'trailers',
    });
    stream.on('error', () => undefined);
    const end: CallEnd = { status: undefined, message: undefined, trailersOnly: false };
    stream.on('response', (headers) => {
      if (headers['grpc-status'] === undefined) return;
      Object.assign(end, {
        status: headers['grpc-status'],
        message: decodeURIComponent(String(headers['grpc-message'] ?? '')),
        trailersOnly: true,
      });
    });
    stream.on('trailers', (trailers) =>
      Object.assign(end, {
        status: trailers['grpc-status'],
        message: decodeURIComponent(String(trailers['grpc-message'] ?? '')),
      }),
    );
    stream.end(body);
    stream.resume();
    await new Promise((resolve) => stream.on('close', resolve));
    return end;
  } finally {
    session.close();
  }
}

const message = (value: MessageInitShape<typeof AgentMessageSchema>['message']) =>
  grpcFrame(toBinary(AgentMessageSchema, create(AgentMessageSchema, { message: value })));

describe('Control over gRPC (raw handler)', () => {
  it('refuses a wrong join token with UNAUTHENTICATED before answering anything', async () => {
    const end = await rawControl(
      message({ case: 'register', value: { agentId: 'a1', joinToken: 'wrong-token-value', models: [{ id: 'm' }] } }),
    );
    expect(end).toEqual({ status: String(Code.Unauthenticated), message: 'invalid join token', trailersOnly: true });
  });

  it('is INVALID_ARGUMENT when the first message is not Register', async () => {
    const end = await rawControl(message({ case: 'heartbeat', value: { inFlight: 1 } }));
    expect(end).toMatchObject({ status: String(Code.InvalidArgument), trailersOnly: true });
    expect(end.message).toMatch(/Register/);
  });

  it('is UNIMPLEMENTED for a compressed message, INTERNAL for one that does not decode or is cut short, RESOURCE_EXHAUSTED for one over 1 MiB', async () => {
    const compressed = message({ case: 'heartbeat', value: {} });
    compressed[0] = 1;
    expect(await rawControl(compressed)).toMatchObject({ status: String(Code.Unimplemented), trailersOnly: true });
    const garbage = grpcFrame(Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff]));
    expect(await rawControl(garbage)).toMatchObject({ status: String(Code.Internal), trailersOnly: true });
    const huge = Buffer.alloc(5);
    huge.writeUInt32BE(2 * 1024 * 1024, 1);
    expect(await rawControl(huge)).toMatchObject({ status: String(Code.ResourceExhausted), trailersOnly: true });
    // A stream that ends inside a message.
    const truncated = await rawControl(message({ case: 'heartbeat', value: { inFlight: 3 } }).subarray(0, 6));
    expect(truncated).toMatchObject({ status: String(Code.Internal), trailersOnly: true });
    expect(truncated.message).toMatch(/inside a message/);
  });

  it('registers and answers Registered, then ends the call with OK when the agent ends its side', async () => {
    const session = http2.connect(`http://127.0.0.1:${edge.tunnelPort}`);
    try {
      const stream = session.request({
        ':method': 'POST',
        ':path': CONTROL_PATH,
        'content-type': 'application/grpc',
        te: 'trailers',
      });
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      let trailers: http2.IncomingHttpHeaders | undefined;
      stream.on('trailers', (received) => (trailers = received));
      stream.write(
        message({
          case: 'register',
          value: { agentId: 'raw-agent', joinToken: JOIN_TOKEN, models: [{ id: 'raw-model' }], maxConcurrency: 2 },
        }),
      );
      await new Promise<void>((resolve) => stream.once('data', () => resolve()));
      stream.end();
      await new Promise((resolve) => stream.on('close', resolve));
      const body = Buffer.concat(chunks);
      expect(body[0]).toBe(0);
      expect(body.readUInt32BE(1)).toBe(body.length - 5); // one message: Registered
      expect(trailers?.['grpc-status']).toBe('0');
    } finally {
      session.close();
    }
  });
  it('ends a registered call with INTERNAL when the agent ends it inside a message', async () => {
    const session = http2.connect(`http://127.0.0.1:${edge.tunnelPort}`);
    try {
      const stream = session.request({
        ':method': 'POST',
        ':path': CONTROL_PATH,
        'content-type': 'application/grpc',
        te: 'trailers',
      });
      let trailers: http2.IncomingHttpHeaders | undefined;
      stream.on('trailers', (received) => (trailers = received));
      stream.write(
        message({
          case: 'register',
          value: { agentId: 'cut-agent', joinToken: JOIN_TOKEN, models: [{ id: 'cut-model' }], maxConcurrency: 1 },
        }),
      );
      await new Promise<void>((resolve) => stream.once('data', () => resolve()));
      stream.resume();
      stream.end(message({ case: 'heartbeat', value: { inFlight: 1 } }).subarray(0, 4));
      await new Promise((resolve) => stream.on('close', resolve));
      expect(trailers?.['grpc-status']).toBe(String(Code.Internal));
      expect(decodeURIComponent(String(trailers?.['grpc-message']))).toMatch(/inside a message/);
    } finally {
      session.close();
    }
  });
});

describe('Control over the Connect protocol (connect-node route)', () => {
  const client = () =>
    createClient(
      TunnelService,
      createConnectTransport({ baseUrl: `http://127.0.0.1:${edge.tunnelPort}`, httpVersion: '2' }),
    );

  async function* register(joinToken: string): AsyncIterable<AgentMessage> {
    yield create(AgentMessageSchema, {
      message: { case: 'register', value: { agentId: 'connect-agent', joinToken, models: [{ id: 'connect-model' }] } },
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
  }

  it('registers an agent: the first answer is Registered with a session id', async () => {
    for await (const answer of client().control(register(JOIN_TOKEN))) {
      expect(answer.message.case).toBe('registered');
      if (answer.message.case === 'registered') expect(answer.message.value.sessionId).toMatch(/^ses_/);
      break;
    }
  });

  it('refuses a wrong join token with UNAUTHENTICATED', async () => {
    const error = await (async () => {
      for await (const answer of client().control(register('wrong-token-value'))) void answer;
    })().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ConnectError);
    expect((error as ConnectError).code).toBe(Code.Unauthenticated);
  });
});
