/**
 * The Responses WebSocket writer and client events over a real `ws` server and client on
 * loopback: one message per JSON line, backpressure from `bufferedAmount` with 'drain', the error
 * event of an error body, close semantics; the client event reader's errors.
 */
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import WebSocket, { WebSocketServer } from 'ws';
import type { IopError } from '@iop/core';
import { parseClientEvent } from '../../../src/responses-socket/client-events.js';
import { errorEvent, SocketResponse } from '../../../src/responses-socket/socket-response.js';

let server: WebSocketServer;
let serverSide: WebSocket;
let client: WebSocket;
let received: string[];

beforeEach(async () => {
  server = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  await once(server, 'listening');
  const accepted = once(server, 'connection');
  client = new WebSocket(`ws://127.0.0.1:${(server.address() as AddressInfo).port}`);
  received = [];
  client.on('message', (data) => received.push(String(data)));
  [serverSide] = (await accepted) as [WebSocket];
  await once(client, 'open');
});

afterEach(async () => {
  client.terminate();
  await new Promise((resolve) => server.close(resolve));
});

const until = async (check: () => boolean) => {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
};

describe('SocketResponse', () => {
  it('sends each complete JSON line as one text message, in order, and closes as finished at end()', async () => {
    const res = new SocketResponse(serverSide, 64 * 1024);
    const closes: boolean[] = [];
    res.on('close', () => closes.push(res.writableFinished));
    expect(res.write('{"type":"response.created"}\n{"type":"response.in_progress"}\n')).toBe(true);
    expect(res.headersSent).toBe(true);
    expect(res.terminalSent).toBe(false);
    res.write('{"type":"response.completed","response":{}}\n');
    expect(res.terminalSent).toBe(true);
    res.end();
    expect(closes).toEqual([true]);
    await until(() => received.length === 3);
    expect(received).toEqual([
      '{"type":"response.created"}',
      '{"type":"response.in_progress"}',
      '{"type":"response.completed","response":{}}',
    ]);
  });

  it('reports backpressure while the client reads nothing, and drains when it reads again', async () => {
    const res = new SocketResponse(serverSide, 64 * 1024);
    // The client stops reading: the kernel buffers fill, then ws's own queue grows.
    (client as unknown as { _socket: { pause(): void; resume(): void } })._socket.pause();
    const line = `{"type":"response.output_text.delta","delta":"${'x'.repeat(16 * 1024)}"}\n`;
    let writes = 0;
    while (res.write(line)) {
      writes++;
      if (writes % 64 === 0) await new Promise((resolve) => setImmediate(resolve));
      if (writes > 100_000) throw new Error('never reported backpressure');
    }
    expect(serverSide.bufferedAmount).toBeGreaterThanOrEqual(64 * 1024);
    // Ended with the buffer full: finished only once it drains.
    res.write('{"type":"response.completed","response":{}}\n');
    res.end();
    expect(res.writableFinished).toBe(false);
    const closed = once(res, 'close');
    const drained = once(res, 'drain');
    (client as unknown as { _socket: { resume(): void } })._socket.resume();
    await drained;
    await closed;
    expect(res.writableFinished).toBe(true);
    expect(serverSide.bufferedAmount).toBeLessThan(64 * 1024);
    await until(() => received.length === writes + 2);
    expect(received).toHaveLength(writes + 2);
    expect(received.at(-1)).toBe('{"type":"response.completed","response":{}}');
  });

  it('renders an error body answered with a status as the in-band error event, with its headers', async () => {
    const res = new SocketResponse(serverSide, 64 * 1024);
    res.status(429).setHeader('Retry-After', '3');
    res.json({ error: { message: 'slow down', type: 'rate_limit_error', param: null, code: 'rate_limit_exceeded' } });
    await until(() => received.length === 1);
    expect(JSON.parse(received[0]!)).toEqual({
      type: 'error',
      status: 429,
      error: { message: 'slow down', type: 'rate_limit_error', param: null, code: 'rate_limit_exceeded' },
      headers: { 'retry-after': '3' },
    });
    expect(res.writableFinished).toBe(true);
  });

  it('a socket closed mid-response closes it unfinished (the pipeline then stops the request), once', () => {
    const res = new SocketResponse(serverSide, 64 * 1024);
    const closes: boolean[] = [];
    res.on('close', () => closes.push(res.writableFinished));
    res.write('{"type":"response.created"}\n');
    res.socketClosed();
    res.socketClosed();
    res.end();
    expect(closes).toEqual([false]);
    expect(res.destroyed).toBe(true);
  });
});

describe('errorEvent', () => {
  it('turns an unknown previous_response_id (404) into 400 previous_response_not_found', () => {
    const event = errorEvent(404, {
      error: {
        message: "Response with id 'resp_1' not found.",
        type: 'not_found_error',
        param: 'previous_response_id',
        code: null,
      },
    });
    expect(event).toEqual({
      type: 'error',
      status: 400,
      error: {
        message: "Response with id 'resp_1' not found.",
        type: 'invalid_request_error',
        param: 'previous_response_id',
        code: 'previous_response_not_found',
      },
    });
  });
});

describe('parseClientEvent', () => {
  const parse = (value: unknown, binary = false) =>
    parseClientEvent(Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)), binary);
  const failure = (value: unknown, binary = false) => {
    try {
      parse(value, binary);
    } catch (error) {
      return error as IopError;
    }
    throw new Error('no error');
  };

  it('reads response.create as the POST body with stream implied, and generate:false as a warm-up', () => {
    expect(parse({ type: 'response.create', model: 'm', input: 'hi', stream: false })).toEqual({
      type: 'response.create',
      body: { model: 'm', input: 'hi', stream: true },
      generate: true,
    });
    expect(parse({ type: 'response.create', model: 'm', input: [], generate: false, background: false })).toEqual({
      type: 'response.create',
      body: { model: 'm', input: [], stream: true },
      generate: false,
    });
    expect(parse({ type: 'response.processed', response_id: 'resp_1' })).toEqual({ type: 'response.processed' });
  });

  it('refuses what is not a response.create with a 400 naming the fault', () => {
    expect(failure('{nope')).toMatchObject({
      code: 'invalid_request',
      status: 400,
      message: expect.stringContaining('not valid JSON'),
    });
    expect(failure('[1]')).toMatchObject({ code: 'invalid_request', message: 'a client event must be a JSON object' });
    expect(failure({ model: 'm' })).toMatchObject({ code: 'invalid_request', param: 'type' });
    expect(failure({ type: 'response.cancel' })).toMatchObject({
      param: 'type',
      message: expect.stringContaining("'response.cancel'"),
    });
    expect(failure({ type: 'response.create', background: true })).toMatchObject({ param: 'background' });
    expect(failure({ type: 'response.create', generate: 'no' })).toMatchObject({ param: 'generate' });
    expect(failure({ type: 'response.create' }, true)).toMatchObject({ message: expect.stringContaining('binary') });
  });
});
