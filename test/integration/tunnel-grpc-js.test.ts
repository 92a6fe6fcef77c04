/**
 * The tunnel is plain gRPC: an agent written with any standard gRPC stack can join. Here a bare
 * @grpc/grpc-js client (no Connect code) registers over the edge's connect-node server, receives
 * a run, answers it with ProviderTunnelFrames, and the client's request is answered through it.
 * A Run call is bound to the Control session the run was assigned on (`iop-session-id`): without
 * it, or from another session, the edge refuses it and the run stays intact.
 */
import http2 from 'node:http2';
import * as grpc from '@grpc/grpc-js';
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import {
  AgentMessageSchema,
  EdgeMessageSchema,
  ProviderTunnelFrameSchema,
  ProviderTunnelFrame_Kind as Kind,
  RunSummarySchema,
  type RunSummary,
  type AgentMessage,
  type EdgeMessage,
  type ProviderTunnelFrame,
} from '@iop/proto';
import OpenAI from 'openai';
import { API_KEY, JOIN_TOKEN, eventually, startEdge, stopAll, type EdgeHandle } from './harness';
import { ADMIN_KEY, admin } from './lifecycle-helpers';

let edge: EdgeHandle;
let client: grpc.Client;

beforeAll(async () => {
  edge = await startEdge({ args: ['--admin-keys', ADMIN_KEY] });
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

function register(
  token: string,
  agentId: string,
  model = 'grpc-model',
  resumeToken = '',
): grpc.ClientDuplexStream<AgentMessage, EdgeMessage> {
  const call = client.makeBidiStreamRequest(
    '/iop.v1.TunnelService/Control',
    serializeAgent,
    deserializeEdge,
    new grpc.Metadata(),
  );
  call.write(
    create(AgentMessageSchema, {
      message: {
        case: 'register',
        value: {
          agentId,
          joinToken: token,
          models: [{ id: model, contextLength: 4096 }],
          maxConcurrency: 4,
          agentVersion: 'grpc-js-test',
          backend: 'openai',
          resumeToken,
        },
      },
    }),
  );
  return call;
}

function sessionMetadata(sessionId: string | undefined): grpc.Metadata {
  const metadata = new grpc.Metadata();
  if (sessionId !== undefined) metadata.set('iop-session-id', sessionId);
  return metadata;
}

/** Opens a Run call (frames in, the status alone back: proto/iop/v1/tunnel.proto). */
function openRun(sessionId: string | undefined): grpc.ClientDuplexStream<ProviderTunnelFrame, RunSummary> {
  return client.makeBidiStreamRequest(
    '/iop.v1.TunnelService/Run',
    serializeFrame,
    deserializeSummary,
    sessionMetadata(sessionId),
  );
}

/** Opens a Run call, writes `frames`, ends it; resolves with the call's status code (no message may come back). */
function runCall(sessionId: string | undefined, frames: ProviderTunnelFrame[]): Promise<grpc.status> {
  return new Promise((resolve) => {
    const run = openRun(sessionId);
    let messages = 0;
    run.on('data', () => messages++);
    run.on('error', () => undefined);
    run.on('status', (status: grpc.StatusObject) => resolve(messages === 0 ? status.code : grpc.status.INTERNAL));
    for (const frame of frames) run.write(frame);
    run.end();
  });
}

/** The session id from the Registered message on a Control call. */
function registeredOf(
  call: grpc.ClientDuplexStream<AgentMessage, EdgeMessage>,
): Promise<{ sessionId: string; resumeToken: string }> {
  return new Promise((resolve) =>
    call.on('data', (message: EdgeMessage) => {
      if (message.message.case === 'registered') resolve(message.message.value);
    }),
  );
}

async function sessionIdOf(call: grpc.ClientDuplexStream<AgentMessage, EdgeMessage>): Promise<string> {
  return (await registeredOf(call)).sessionId;
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
    let sessionId = '';
    const registered = new Promise<EdgeMessage>((resolve) =>
      call.on('data', (message: EdgeMessage) => {
        if (message.message.case === 'registered') {
          sessionId = message.message.value.sessionId;
          resolve(message);
        }
        if (message.message.case === 'assign') {
          assignments.push(message);
          const assign = message.message.value;
          const run = openRun(sessionId);
          run.on('data', () => undefined);
          run.on('error', () => undefined);
          const body = JSON.stringify({
            id: 'chatcmpl-1',
            object: 'chat.completion',
            created: 1,
            model: 'grpc-model',
            choices: [
              { index: 0, message: { role: 'assistant', content: 'hello from grpc-js' }, finish_reason: 'stop' },
            ],
            usage: { prompt_tokens: 5, completion_tokens: 4, total_tokens: 9 },
          });
          run.write(
            create(ProviderTunnelFrameSchema, {
              runId: assign.runId,
              kind: Kind.RESPONSE_START,
              status: 200,
              headers: { 'content-type': 'application/json' },
            }),
          );
          run.write(
            create(ProviderTunnelFrameSchema, {
              runId: assign.runId,
              kind: Kind.BODY,
              body: new TextEncoder().encode(body),
            }),
          );
          run.write(create(ProviderTunnelFrameSchema, { runId: assign.runId, kind: Kind.END }));
          run.end();
        }
      }),
    );
    call.on('error', () => undefined);
    const first = await registered;
    expect(first.message.case === 'registered' && first.message.value.sessionId).toMatch(/^ses_/);

    const openai = new OpenAI({ apiKey: API_KEY, baseURL: edge.baseURL, maxRetries: 0 });
    const completion = await openai.chat.completions.create({
      model: 'grpc-model',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(completion.choices[0]!.message.content).toBe('hello from grpc-js');
    expect(assignments).toHaveLength(1);
    const assign = assignments[0]!.message;
    if (assign.case !== 'assign') throw new Error('expected an assignment');
    expect(assign.value.path).toBe('/v1/chat/completions');
    expect(assign.value.model).toBe('grpc-model');
    expect(JSON.parse(new TextDecoder().decode(assign.value.body))).toEqual({
      model: 'grpc-model',
      messages: [{ role: 'user', content: 'hi' }],
    });
    call.end();
  });

  it("refuses a Run call without a session (UNAUTHENTICATED) and one for another session's run (NOT_FOUND); the run stays intact", async () => {
    const owner = register(JOIN_TOKEN, 'grpc-owner', 'owned-model');
    const intruder = register(JOIN_TOKEN, 'grpc-intruder', 'intruder-model');
    owner.on('error', () => undefined);
    intruder.on('error', () => undefined);
    const [ownerSession, intruderSession] = await Promise.all([sessionIdOf(owner), sessionIdOf(intruder)]);
    const verdicts: Record<string, grpc.status> = {};
    owner.on('data', (message: EdgeMessage) => {
      if (message.message.case !== 'assign') return;
      const runId = message.message.value.runId;
      const injected = [
        create(ProviderTunnelFrameSchema, {
          runId,
          kind: Kind.RESPONSE_START,
          status: 200,
          headers: { 'content-type': 'application/json' },
        }),
        create(ProviderTunnelFrameSchema, {
          runId,
          kind: Kind.BODY,
          body: new TextEncoder().encode('{"injected":true}'),
        }),
        create(ProviderTunnelFrameSchema, { runId, kind: Kind.END }),
      ];
      void (async () => {
        verdicts.none = await runCall(undefined, injected);
        verdicts.forged = await runCall('ses_forged000000000000000000', injected);
        verdicts.other = await runCall(intruderSession, injected);
        const body = JSON.stringify({
          id: 'chatcmpl-2',
          object: 'chat.completion',
          created: 1,
          model: 'owned-model',
          choices: [{ index: 0, message: { role: 'assistant', content: 'from the owner' }, finish_reason: 'stop' }],
          usage: { prompt_tokens: 1, completion_tokens: 3, total_tokens: 4 },
        });
        verdicts.owner = await runCall(ownerSession, [
          injected[0]!,
          create(ProviderTunnelFrameSchema, { runId, kind: Kind.BODY, body: new TextEncoder().encode(body) }),
          injected[2]!,
        ]);
      })();
    });
    const openai = new OpenAI({ apiKey: API_KEY, baseURL: edge.baseURL, maxRetries: 0 });
    const completion = await openai.chat.completions.create({
      model: 'owned-model',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(completion.choices[0]!.message.content).toBe('from the owner');
    await eventually(() => verdicts.owner !== undefined, 5_000);
    expect(verdicts).toEqual({
      none: grpc.status.UNAUTHENTICATED,
      forged: grpc.status.UNAUTHENTICATED,
      other: grpc.status.NOT_FOUND,
      owner: grpc.status.OK,
    });
    owner.end();
    intruder.end();
  });

  it('a Run call that ends inside a message is INTERNAL; a live agent id is refused without its resume token, replaced with it', async () => {
    const first = register(JOIN_TOKEN, 'grpc-twice', 'twice-model');
    const firstStatus = new Promise<grpc.StatusObject>((resolve) => first.on('status', resolve));
    first.on('error', () => undefined);
    const { sessionId, resumeToken } = await registeredOf(first);
    expect(resumeToken).toMatch(/^[A-Za-z0-9_-]{43}$/);

    const session = http2.connect(`http://127.0.0.1:${edge.tunnelPort}`);
    const stream = session.request({
      ':method': 'POST',
      ':path': '/iop.v1.TunnelService/Run',
      'content-type': 'application/grpc',
      te: 'trailers',
      'iop-session-id': sessionId,
    });
    const status = new Promise<string | undefined>((resolve) => {
      stream.on(
        'response',
        (headers) => headers['grpc-status'] !== undefined && resolve(String(headers['grpc-status'])),
      );
      stream.on('trailers', (trailers) => resolve(String(trailers['grpc-status'])));
    });
    stream.end(Buffer.from([0, 0, 0])); // three bytes of a five-byte length prefix
    expect(await status).toBe(String(grpc.status.INTERNAL));
    session.close();

    // The first session answers PINGs: a Register without its token is someone else.
    const impostor = register(JOIN_TOKEN, 'grpc-twice', 'twice-model', 'not-the-resume-token');
    impostor.on('data', () => undefined);
    impostor.on('error', () => undefined);
    const impostorStatus = await new Promise<grpc.StatusObject>((resolve) => impostor.on('status', resolve));
    expect(impostorStatus.code).toBe(grpc.status.ALREADY_EXISTS);

    const second = register(JOIN_TOKEN, 'grpc-twice', 'twice-model', resumeToken);
    second.on('error', () => undefined);
    const secondSession = await sessionIdOf(second);
    expect(secondSession).not.toBe(sessionId);
    expect((await firstStatus).code).toBe(grpc.status.OK); // the edge ended the earlier Control stream
    await eventually(async () => {
      const { body } = await admin(edge.url, 'GET', '/admin/agents');
      return (body.data as Array<{ id: string }>).filter((agent) => agent.id === 'grpc-twice').length === 1;
    }, 5_000);
    second.end();
  });
});
