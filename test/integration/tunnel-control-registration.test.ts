/**
 * Registration on the Control call while requests wait in the edge's queue: the pool may assign a
 * queued request to a session as soon as it joins, but the agent can open that run's Run call only
 * with the session id of `Registered`. So `Registered` is the first message of the call, before
 * any RunAssignment (an assignment ahead of it is opened with no or a stale session id, refused
 * UNAUTHENTICATED, and the request waits out the accepted timeout).
 */
import http2 from 'node:http2';
import { create, toBinary } from '@bufbuild/protobuf';
import OpenAI from 'openai';
import { AgentMessageSchema, CONTROL_PATH, GrpcMessageReader, decodeEdgeMessage, grpcFrame } from '@iop/proto';
import { API_KEY, JOIN_TOKEN, eventually, startAgent, startEdge, startSim, stopAll, type EdgeHandle } from './harness';

afterAll(stopAll);

let edge: EdgeHandle;

beforeAll(async () => {
  const sim = await startSim(['--models', 'sim-model', '--output-tokens', '4', '--ttft-ms', '4000']);
  edge = await startEdge();
  await startAgent({
    tunnelPort: edge.tunnelPort,
    id: 'busy-agent',
    backendUrl: sim.url,
    models: ['sim-model'],
    args: ['--max-concurrency', '1'],
  });
});

it('answers Registered before any RunAssignment, even with requests waiting for a slot', async () => {
  const openai = new OpenAI({ apiKey: API_KEY, baseURL: edge.baseURL, maxRetries: 0 });
  const requests = Array.from({ length: 3 }, () =>
    openai.chat.completions
      .create({ model: 'sim-model', max_tokens: 4, messages: [{ role: 'user', content: 'hi' }] })
      .catch(() => undefined),
  );
  await eventually(
    async () => /iop_pool_queued\{group="sim-model"\} 2/.test(await (await fetch(`${edge.url}/metrics`)).text()),
    5_000,
  );

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
    const reader = new GrpcMessageReader();
    const seen: string[] = [];
    stream.on('data', (chunk: Buffer) =>
      reader.push(chunk, (message) => seen.push(String(decodeEdgeMessage(message.payload).message.case))),
    );
    const register = create(AgentMessageSchema, {
      message: {
        case: 'register',
        value: { agentId: 'joining-agent', joinToken: JOIN_TOKEN, models: [{ id: 'sim-model' }], maxConcurrency: 4 },
      },
    });
    stream.write(grpcFrame(toBinary(AgentMessageSchema, register)));
    await eventually(() => seen.includes('assign'), 5_000);
    expect(seen[0]).toBe('registered');
  } finally {
    session.destroy();
    await Promise.all(requests);
  }
}, 30_000);
