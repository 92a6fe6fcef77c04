/**
 * OpenAiClient against a real HTTP server on loopback: what it sends, what it returns, and that a
 * response is pulled (a slow reader holds the backend socket), stopped by an early `return()` or
 * by the run's signal, and that failures before the status reject the call.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { OpenAiClient } from '../src/openai-client.js';
import { toRunFailure } from '../src/run-failure.js';

interface Server {
  url: string;
  server: http.Server;
  requests: Array<{ method: string; url: string; headers: http.IncomingHttpHeaders; body: string }>;
}

async function serve(handler: (req: http.IncomingMessage, res: http.ServerResponse) => void): Promise<Server> {
  const requests: Server['requests'] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      requests.push({
        method: req.method!,
        url: req.url!,
        headers: req.headers,
        body: Buffer.concat(chunks).toString(),
      });
      handler(req, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server, requests };
}

const servers: http.Server[] = [];
const clients: OpenAiClient[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close()));
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    server.close();
  }
});

async function setup(handler: (req: http.IncomingMessage, res: http.ServerResponse) => void, baseSuffix = '') {
  const backend = await serve(handler);
  servers.push(backend.server);
  const client = new OpenAiClient({ baseUrl: backend.url + baseSuffix, apiKey: 'backend-key' });
  clients.push(client);
  return { backend, client };
}

const request = (signal = new AbortController().signal, body = '{"model":"m"}') => ({
  method: 'post',
  path: '/v1/chat/completions',
  headers: { authorization: 'Bearer client-key', 'x-api-key': 'client-key', 'user-agent': 'test' },
  body: Buffer.from(body),
  signal,
  requestId: 'req_1',
});

async function collect(body: AsyncIterable<Uint8Array>): Promise<string> {
  const parts: Buffer[] = [];
  for await (const slice of body) parts.push(Buffer.from(slice));
  return Buffer.concat(parts).toString();
}

describe('OpenAiClient', () => {
  it('sends the request under the base path with its own key, and returns status, end-to-end headers and the body', async () => {
    const { backend, client } = await setup((_req, res) => {
      res.writeHead(201, {
        'content-type': 'application/json',
        'x-backend': 'yes',
        connection: 'keep-alive',
        'keep-alive': 'timeout=5',
      });
      res.end('{"id":"chatcmpl-1"}');
    }, '/prefix/v1/');
    const response = await client.handle(request());
    expect(response.status).toBe(201);
    expect(response.headers).toMatchObject({ 'content-type': 'application/json', 'x-backend': 'yes' });
    expect(response.headers.connection).toBeUndefined();
    expect(response.headers['keep-alive']).toBeUndefined();
    expect(await collect(response.body)).toBe('{"id":"chatcmpl-1"}');
    const sent = backend.requests[0]!;
    expect(sent).toMatchObject({ method: 'POST', url: '/prefix/v1/chat/completions', body: '{"model":"m"}' });
    expect(sent.headers).toMatchObject({
      authorization: 'Bearer backend-key',
      'content-type': 'application/json',
      'x-request-id': 'req_1',
      'user-agent': 'test',
    });
    expect(sent.headers['x-api-key']).toBeUndefined();
  });

  it('pulls the body: a reader that stops reading holds the backend socket (its writes back up)', async () => {
    const slice = Buffer.alloc(64 * 1024, 0x61);
    let written = 0;
    let blocked = false;
    const { client } = await setup((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const pump = () => {
        while (written < 256 * 1024 * 1024) {
          written += slice.length;
          if (!res.write(slice)) {
            blocked = true;
            res.once('drain', pump);
            return;
          }
        }
        res.end();
      };
      pump();
    });
    const response = await client.handle(request());
    const iterator = response.body[Symbol.asyncIterator]();
    let read = 0;
    for (let index = 0; index < 4; index++) read += (await iterator.next()).value!.length;
    await new Promise((resolve) => setTimeout(resolve, 300));
    const heldAt = written;
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(blocked).toBe(true);
    expect(written).toBe(heldAt); // nothing more while nobody reads
    expect(written).toBeLessThan(32 * 1024 * 1024); // socket buffers, not the whole body
    expect(read).toBeGreaterThan(0);
    await iterator.return!();
  });

  it('stops the backend request when the reader returns early', async () => {
    let closed: () => void = () => undefined;
    const backendClosed = new Promise<void>((resolve) => (closed = resolve));
    const { client } = await setup((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"n":1}\n\n');
      const timer = setInterval(() => res.write('data: {"n":2}\n\n'), 20);
      res.on('close', () => {
        clearInterval(timer);
        closed();
      });
    });
    const response = await client.handle(request());
    for await (const slice of response.body) {
      expect(Buffer.from(slice).toString()).toContain('"n":1');
      break;
    }
    await backendClosed;
  });

  it("aborts at once on the run's signal, before the status too, and the backend sees the connection close", async () => {
    let closed: () => void = () => undefined;
    const backendClosed = new Promise<void>((resolve) => (closed = resolve));
    const { client } = await setup((_req, res) => {
      res.on('close', () => closed());
    });
    const controller = new AbortController();
    const pending = client.handle(request(controller.signal));
    setTimeout(() => controller.abort(new Error('cancelled by the edge')), 50);
    await expect(pending).rejects.toThrow('cancelled by the edge');
    await backendClosed;
    expect(toRunFailure(new Error('x'), controller.signal, false).codeName).toBe('cancelled');
  });

  it('rejects with the connection error when the backend cannot be reached (connect_failed)', async () => {
    const probe = await serve(() => undefined);
    const url = probe.url;
    await new Promise((resolve) => probe.server.close(resolve));
    const client = new OpenAiClient({ baseUrl: url });
    clients.push(client);
    const signal = new AbortController().signal;
    const error = await client.handle(request(signal)).catch((caught: unknown) => caught);
    expect(toRunFailure(error, signal, false).codeName).toBe('connect_failed');
  });

  it('fails the body with the connection error when the backend resets mid-body (backend_reset)', async () => {
    const { client } = await setup((req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {}\n\n');
      setTimeout(() => req.socket.destroy(), 30);
    });
    const signal = new AbortController().signal;
    const response = await client.handle(request(signal));
    const error = await collect(response.body).catch((caught: unknown) => caught);
    expect(toRunFailure(error, signal, true).codeName).toBe('backend_reset');
  });
});
