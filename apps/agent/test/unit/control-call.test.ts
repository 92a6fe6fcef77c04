/**
 * `controlCall` against a plain node:http2 server playing the edge's side of `Control`.
 * Assignments carry whole request bodies, bounded by the edge's `maxBodyBytes` (up to 1 GiB), not
 * by the agent: an assignment larger than any fixed limit of the agent must still be read.
 */
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { Http2SessionManager } from '@connectrpc/connect-node';
import { AsyncQueue } from '@iop/core';
import {
  DEFAULT_MAX_MESSAGE_BYTES,
  encodeEdgeMessage,
  edgeMessage,
  runAssignment,
  type AgentMessage,
  type EdgeMessage,
} from '@iop/proto';
import { controlCall } from '../../src/control-call';

let server: http2.Http2Server;
let connection: Http2SessionManager;

beforeEach(async () => {
  server = http2.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  connection = new Http2SessionManager(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
});

afterEach(async () => {
  connection.abort();
  await new Promise((resolve) => server.close(resolve));
});

test('reads an assignment larger than the default gRPC message limit', async () => {
  const body = Buffer.alloc(DEFAULT_MAX_MESSAGE_BYTES + 1024, 0x61);
  server.on('stream', (stream) => {
    stream.on('error', () => undefined);
    stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
    stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
    stream.end(encodeEdgeMessage(edgeMessage({ case: 'assign', value: runAssignment({ runId: 'run_big', body }) })));
  });
  const outgoing = new AsyncQueue<AgentMessage>(Number.POSITIVE_INFINITY);
  const received: EdgeMessage[] = [];
  for await (const message of controlCall(connection, outgoing, new AbortController().signal)) received.push(message);
  expect(received).toHaveLength(1);
  const assigned = received[0]!.message;
  expect(assigned.case).toBe('assign');
  if (assigned.case === 'assign') {
    expect(assigned.value.runId).toBe('run_big');
    expect(assigned.value.body.length).toBe(body.length);
  }
}, 30_000);
