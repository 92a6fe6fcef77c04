/**
 * The tunnel is plain gRPC: an agent written with any standard gRPC stack can join. Here a bare
 * @grpc/grpc-js client (no Connect code) registers over the edge's connect-node server, receives
 * a run, answers it with ProviderTunnelFrames, and the client's request is answered through it.
 */
import * as grpc from '@grpc/grpc-js';
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import {
  AgentMessageSchema,
  EdgeMessageSchema,
  ProviderTunnelFrameSchema,
  ProviderTunnelFrame_Kind as Kind,
  RunSummarySchema,
  type AgentMessage,
  type EdgeMessage,
  type ProviderTunnelFrame,
} from '@iop/proto';
import OpenAI from 'openai';
import { API_KEY, JOIN_TOKEN, startEdge, stopAll, type EdgeHandle } from './harness';

let edge: EdgeHandle;
let client: grpc.Client;

beforeAll(async () => {
  edge = await startEdge();
  client = new grpc.Client(`127.0.0.1:${edge.tunnelPort}`, grpc.credentials.createInsecure());
});

afterAll(async () => {
  client.close();
  await stopAll();
});

const serializeAgent = (message: AgentMessage) => Buffer.from(toBinary(AgentMessageSchema, message));
const deserializeEdge = (bytes: Buffer) => fromBinary(EdgeMessageSchema, bytes);
const serializeFrame = (frame: ProviderTunnelFrame) => Buffer.from(toBinary(ProviderTunnelFrameSchema, frame));
const deserializeSummary = (bytes: Buffer) => fromBinary(RunSummarySchema, bytes);

function register(token: string, agentId: string): grpc.ClientDuplexStream<AgentMessage, EdgeMessage> {
  const call = client.makeBidiStreamRequest('/iop.v1.TunnelService/Control', serializeAgent, deserializeEdge, new grpc.Metadata());
  call.write(
    create(AgentMessageSchema, {
      message: { case: 'register', value: { agentId, joinToken: token, models: [{ id: 'grpc-model', contextLength: 4096 }], maxConcurrency: 4, agentVersion: 'grpc-js-test', backend: 'openai' } },
    }),
  );
  return call;
}

describe('tunnel over plain @grpc/grpc-js', () => {
  it('refuses a wrong join token with UNAUTHENTICATED', async () => {
    const call = register('not-the-token', 'intruder');
    const status = await new Promise<grpc.StatusObject>((resolve) => {
      call.on('data', () => undefined);
      call.on('error', () => undefined);
      call.on('status', resolve);
    });
    expect(status.code).toBe(grpc.status.UNAUTHENTICATED);
    expect(status.details).toMatch(/join token/);
  });

  it('registers, receives a run, and answers it with frames', async () => {
    const call = register(JOIN_TOKEN, 'grpc-agent');
    const assignments: EdgeMessage[] = [];
    const registered = new Promise<EdgeMessage>((resolve) =>
      call.on('data', (message: EdgeMessage) => {
        if (message.message.case === 'registered') resolve(message);
        if (message.message.case === 'assign') {
          assignments.push(message);
          const assign = message.message.value;
          const run = client.makeClientStreamRequest('/iop.v1.TunnelService/Run', serializeFrame, deserializeSummary, () => undefined);
          const body = JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion', created: 1, model: 'grpc-model', choices: [{ index: 0, message: { role: 'assistant', content: 'hello from grpc-js' }, finish_reason: 'stop' }], usage: { prompt_tokens: 5, completion_tokens: 4, total_tokens: 9 } });
          run.write(create(ProviderTunnelFrameSchema, { runId: assign.runId, kind: Kind.RESPONSE_START, status: 200, headers: { 'content-type': 'application/json' } }));
          run.write(create(ProviderTunnelFrameSchema, { runId: assign.runId, kind: Kind.BODY, body: new TextEncoder().encode(body) }));
          run.write(create(ProviderTunnelFrameSchema, { runId: assign.runId, kind: Kind.END }));
          run.end();
        }
      }),
    );
    call.on('error', () => undefined);
    const first = await registered;
    expect(first.message.case === 'registered' && first.message.value.sessionId).toMatch(/^ses_/);

    const openai = new OpenAI({ apiKey: API_KEY, baseURL: edge.baseURL, maxRetries: 0 });
    const completion = await openai.chat.completions.create({ model: 'grpc-model', messages: [{ role: 'user', content: 'hi' }] });
    expect(completion.choices[0]!.message.content).toBe('hello from grpc-js');
    expect(assignments).toHaveLength(1);
    const assign = assignments[0]!.message;
    if (assign.case !== 'assign') throw new Error('expected an assignment');
    expect(assign.value.path).toBe('/v1/chat/completions');
    expect(assign.value.model).toBe('grpc-model');
    expect(JSON.parse(new TextDecoder().decode(assign.value.body))).toEqual({ model: 'grpc-model', messages: [{ role: 'user', content: 'hi' }] });
    call.end();
  });
});
