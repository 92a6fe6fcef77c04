/**
 * An in-test edge: a Connect HTTP/2 (h2c) server implementing TunnelService that records what the
 * agent sends and lets the test push EdgeMessages on the Control stream.
 */
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { create, type MessageInitShape } from '@bufbuild/protobuf';
import { Code, ConnectError, type ConnectRouter } from '@connectrpc/connect';
import { connectNodeAdapter } from '@connectrpc/connect-node';
import {
  EdgeMessageSchema,
  RegisteredSchema,
  type RunSummary,
  TunnelService,
  type AgentMessage,
  type EdgeMessage,
  type Heartbeat,
  type ProviderTunnelFrame,
  type Register,
  type RunRejected,
} from '@iop/proto';
import { AsyncQueue, sleep } from '@iop/core';

export interface RecordedRun {
  frames: ProviderTunnelFrame[];
  ended: boolean;
}

export class TestEdge {
  readonly registrations: Register[] = [];
  readonly heartbeats: Heartbeat[] = [];
  readonly rejections: RunRejected[] = [];
  readonly runs = new Map<string, RecordedRun>();
  controlEnded = 0;
  /**
   * When set, Run handlers stop reading after the first BODY frame until it resolves (HTTP/2 flow control then holds
   * the agent back).
   */
  runGate: Promise<void> | undefined;
  /** Fail the Run call of this run id right after its first BODY frame. */
  failRunAfterFirstBody = new Set<string>();
  private outgoing: AsyncQueue<EdgeMessage> | undefined;
  private server: http2.Http2Server | undefined;
  private readonly sessions = new Set<http2.ServerHttp2Session>();
  private sessionCounter = 0;
  port = 0;

  constructor(private readonly options: { joinToken: string; heartbeatIntervalMs?: number }) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(port = this.port): Promise<void> {
    const handler = connectNodeAdapter({ routes: (router: ConnectRouter) => this.routes(router) });
    const server = http2.createServer(handler);
    server.on('session', (session) => {
      this.sessions.add(session);
      session.on('close', () => this.sessions.delete(session));
    });
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    this.outgoing?.close();
    for (const session of this.sessions) session.destroy();
    if (server !== undefined) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  send(message: MessageInitShape<typeof EdgeMessageSchema>['message']): void {
    if (this.outgoing === undefined) throw new Error('no control stream');
    this.outgoing.push(create(EdgeMessageSchema, { message }));
  }

  assign(value: {
    runId: string;
    path?: string;
    method?: string;
    body?: string;
    headers?: Record<string, string>;
    firstByteTimeoutMs?: number;
  }): void {
    this.send({
      case: 'assign',
      value: {
        runId: value.runId,
        requestId: `req_${value.runId}`,
        model: 'm',
        method: value.method ?? 'POST',
        path: value.path ?? '/v1/chat/completions',
        headers: value.headers ?? { 'content-type': 'application/json' },
        body: Buffer.from(value.body ?? '{}'),
        idempotencyKey: `att_${value.runId}`,
        firstByteTimeoutMs: value.firstByteTimeoutMs ?? 0,
      },
    });
  }

  private routes(router: ConnectRouter): void {
    router.service(TunnelService, {
      control: (requests) => this.control(requests),
      run: (requests) => this.run(requests),
    });
  }

  /** The edge answers a Run with its status alone (proto/iop/v1/tunnel.proto). */
  // eslint-disable-next-line require-yield
  private async *run(requests: AsyncIterable<ProviderTunnelFrame>): AsyncIterable<RunSummary> {
    let record: RecordedRun | undefined;
    for await (const frame of requests) {
      if (record === undefined) {
        record = this.runs.get(frame.runId) ?? { frames: [], ended: false };
        this.runs.set(frame.runId, record);
      }
      record.frames.push(frame);
      if (frame.kind === 2 && this.runGate !== undefined) await this.runGate;
      if (this.failRunAfterFirstBody.has(frame.runId) && frame.kind === 2) {
        throw new ConnectError('client went away', Code.Canceled);
      }
    }
    if (record !== undefined) record.ended = true;
  }

  private async *control(requests: AsyncIterable<AgentMessage>): AsyncIterable<EdgeMessage> {
    const iterator = requests[Symbol.asyncIterator]();
    const first = await iterator.next();
    if (first.done === true || first.value.message.case !== 'register') {
      throw new ConnectError('Register must come first', Code.InvalidArgument);
    }
    const register = first.value.message.value;
    if (register.joinToken !== this.options.joinToken)
      throw new ConnectError('invalid join token', Code.Unauthenticated);
    this.registrations.push(register);
    const outgoing = new AsyncQueue<EdgeMessage>(Number.POSITIVE_INFINITY);
    this.outgoing = outgoing;
    void (async () => {
      try {
        for (let next = await iterator.next(); next.done !== true; next = await iterator.next()) {
          const message = next.value.message;
          if (message.case === 'heartbeat') this.heartbeats.push(message.value);
          if (message.case === 'runRejected') this.rejections.push(message.value);
        }
      } catch {
        // stream broken
      }
      this.controlEnded++;
      outgoing.close();
    })();
    yield create(EdgeMessageSchema, {
      message: {
        case: 'registered',
        value: create(RegisteredSchema, {
          sessionId: `sess_${++this.sessionCounter}`,
          heartbeatIntervalMs: this.options.heartbeatIntervalMs ?? 50,
          edgeVersion: 'test',
        }),
      },
    });
    yield* outgoing;
  }
}

/** Polls `predicate` every 5 ms until it holds; throws after `timeoutMs`. */
export async function waitFor(predicate: () => boolean, timeoutMs = 5_000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}
