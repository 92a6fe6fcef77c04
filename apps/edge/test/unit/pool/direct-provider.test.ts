import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { RunErrorCode, type ProviderTunnelFrame } from '@iop/proto';
import { DirectProvider } from '../../../src/pool/direct-provider.js';
import { parsePoolConfig } from '../../../src/pool/pool-config.js';
import { FrameKind } from '../../../src/tunnel/run-registry.js';
import type { RunStream } from '../../../src/pool/run-stream.js';
import { sleep } from '@iop/core';

let server: http.Server;
let baseUrl: string;
let handler: (req: http.IncomingMessage, res: http.ServerResponse, body: string) => void;
const closed: string[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => handler(req, res, body));
    res.on('close', () => {
      if (!res.writableFinished) closed.push(req.url ?? '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

function provider(fields: Record<string, unknown> = {}): DirectProvider {
  const config = parsePoolConfig({
    directProviders: [{ id: 'direct-1', baseUrl, models: ['m'], apiKey: 'sk-upstream', maxConcurrency: 2, ...fields }],
  });
  return new DirectProvider(config.directProviders[0]!);
}

async function collect(run: RunStream): Promise<ProviderTunnelFrame[]> {
  const frames: ProviderTunnelFrame[] = [];
  for await (const frame of run.frames) frames.push(frame);
  return frames;
}

const request = (fields: Record<string, unknown> = {}) => ({
  requestId: 'req-1',
  model: 'm',
  method: 'POST',
  path: '/v1/chat/completions',
  body: Buffer.from('{"model":"m"}'),
  acceptedTimeoutMs: 1000,
  headers: { authorization: 'Bearer client-key' },
  ...fields,
});

describe('DirectProvider', () => {
  it('streams RESPONSE_START, BODY, USAGE, END; sends its own key to <base>/chat/completions', async () => {
    let seen: { url?: string; authorization?: string; body?: string } = {};
    handler = (req, res, body) => {
      seen = { url: req.url, authorization: req.headers.authorization, body };
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"choices":[{"delta":{"content":"hi"}}]}\n\n');
      res.end(
        'data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}\n\ndata: [DONE]\n\n',
      );
    };
    const direct = provider();
    const run = direct.start(request());
    expect(direct.inFlight).toBe(1);
    const frames = await collect(run);
    expect(seen).toEqual({ url: '/v1/chat/completions', authorization: 'Bearer sk-upstream', body: '{"model":"m"}' });
    expect(frames.map((frame) => frame.kind)).toEqual([
      FrameKind.RESPONSE_START,
      ...frames.slice(1, -2).map(() => FrameKind.BODY),
      FrameKind.USAGE,
      FrameKind.END,
    ]);
    expect(frames[0]!.status).toBe(200);
    expect(frames[0]!.headers['content-type']).toBe('text/event-stream');
    expect(frames.at(-2)!.usage).toMatchObject({ promptTokens: 3, completionTokens: 1 });
    expect(direct.inFlight).toBe(0);
    await direct.close();
  });

  it('passes an error status on as RESPONSE_START with the body', async () => {
    handler = (_req, res) => {
      res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '2' });
      res.end('{"error":{"message":"busy"}}');
    };
    const direct = provider();
    const frames = await collect(direct.start(request()));
    expect(frames[0]).toMatchObject({ kind: FrameKind.RESPONSE_START, status: 503 });
    expect(frames[0]!.headers['retry-after']).toBe('2');
    expect(
      Buffer.concat(frames.filter((frame) => frame.kind === FrameKind.BODY).map((frame) => frame.body)).toString(),
    ).toBe('{"error":{"message":"busy"}}');
    await direct.close();
  });

  it('fails with connect_failed when nothing listens', async () => {
    const config = parsePoolConfig({
      directProviders: [{ id: 'gone', baseUrl: 'http://127.0.0.1:1/v1', models: ['m'] }],
    });
    const direct = new DirectProvider(config.directProviders[0]!);
    const frames = await collect(direct.start(request()));
    expect(frames).toHaveLength(1);
    expect(frames[0]).toMatchObject({ kind: FrameKind.ERROR, errorCode: RunErrorCode.CONNECT_FAILED });
    await direct.close();
  });

  it('fails with first_byte_timeout when no body byte comes in time (the request value wins)', async () => {
    handler = (_req, res) => res.writeHead(200, { 'content-type': 'text/event-stream' }).flushHeaders();
    const direct = provider({ firstByteTimeoutMs: 60_000 });
    const frames = await collect(direct.start(request({ firstByteTimeoutMs: 150 })));
    expect(frames.at(-1)).toMatchObject({ kind: FrameKind.ERROR, errorCode: RunErrorCode.FIRST_BYTE_TIMEOUT });
    await direct.close();
  });

  it('fails with idle_timeout when the stream stalls', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"choices":[]}\n\n');
    };
    const direct = provider({ idleTimeoutMs: 150 });
    const frames = await collect(direct.start(request()));
    expect(frames.map((frame) => frame.kind)).toEqual([FrameKind.RESPONSE_START, FrameKind.BODY, FrameKind.ERROR]);
    expect(frames.at(-1)!.errorCode).toBe(RunErrorCode.IDLE_TIMEOUT);
    await direct.close();
  });

  it('cancel aborts the upstream request and frees the slot', async () => {
    handler = (req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`data: {"path":"${req.url}"}\n\n`);
    };
    const direct = provider({ baseUrl: baseUrl.replace('/v1', '/cancel/v1') });
    const run = direct.start(request());
    expect((await run.frames.next()).value).toMatchObject({ kind: FrameKind.RESPONSE_START });
    run.cancel('client left');
    expect(run.isFinished).toBe(true);
    expect(direct.inFlight).toBe(0);
    const deadline = Date.now() + 5000;
    while (!closed.includes('/cancel/v1/chat/completions') && Date.now() < deadline) await sleep(10);
    expect(closed).toContain('/cancel/v1/chat/completions');
    await direct.close();
  });

  it('retire takes no new run, lets the run in flight finish, then closes', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"choices":[{"delta":{"content":"a"}}]}\n\n');
      setTimeout(() => res.end('data: {"choices":[{"delta":{"content":"b"}}]}\n\ndata: [DONE]\n\n'), 150);
    };
    const direct = provider();
    const run = direct.start(request());
    expect((await run.frames.next()).value).toMatchObject({ kind: FrameKind.RESPONSE_START, status: 200 });
    let retired = false;
    const retiring = direct.retire().then(() => (retired = true));
    expect(direct.accepting).toBe(false);
    expect(direct.available).toBe(false);
    const rest = await collect(run);
    expect(rest.at(-1)!.kind).toBe(FrameKind.END);
    expect(
      Buffer.concat(
        rest.filter((frame) => frame.kind === FrameKind.BODY).map((frame) => Buffer.from(frame.body)),
      ).toString(),
    ).toContain('[DONE]');
    await retiring;
    expect(retired).toBe(true);
    expect(direct.inFlight).toBe(0);
  });

  it('joins a base URL without /v1 to the full path', () => {
    const config = parsePoolConfig({
      directProviders: [
        { id: 'x', baseUrl: 'http://h:8000', models: ['m'] },
        { id: 'y', baseUrl: 'http://h:8000/openai/v1/', models: ['m'] },
      ],
    });
    expect(new DirectProvider(config.directProviders[0]!).upstreamPath('/v1/chat/completions')).toBe(
      '/v1/chat/completions',
    );
    expect(new DirectProvider(config.directProviders[1]!).upstreamPath('/v1/chat/completions')).toBe(
      '/openai/v1/chat/completions',
    );
  });
});
