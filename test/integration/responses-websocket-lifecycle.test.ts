/**
 * Responses over WebSocket at the edges of its life: graceful shutdown (the current response
 * finishes, then 1001), the shutdown deadline (the response fails in band, then 1001), the
 * message size limit (1009), the edge-wide connection cap (503), the mode turned off (426), and
 * pings (a peer that does not answer is terminated, one that does stays).
 */
import WebSocket from 'ws';
import { API_KEY, startAgent, startEdge, startSim, stopAll } from './harness';
import { finalResponse, SocketClient } from './responses-websocket-client';

const OTHER_KEY = 'sk-iop-test-key-0002';

afterEach(stopAll);

async function servedEdge(args: string[]) {
  // Ten tokens 200 ms apart: two seconds per response.
  const sim = await startSim(['--models', 'sim-model', '--output-tokens', '10', '--itl-ms', '200']);
  const edge = await startEdge({ args, env: { IOP_RESPONSES_STORE_KIND: 'memory' } });
  await startAgent({ tunnelPort: edge.tunnelPort, id: 'agent-ws-life', backendUrl: sim.url, models: ['sim-model'] });
  return edge;
}

it('SIGTERM: an idle connection closes at once with 1001, a running response completes and then its connection closes with 1001', async () => {
  const edge = await servedEdge(['--shutdown-deadline-ms', '10000']);
  const idle = await SocketClient.open(edge);
  const busy = await SocketClient.open(edge);
  const events = busy.create({ model: 'sim-model', input: 'finish me', store: false });
  await busy.waitFor((all) => all.some((event) => event.type === 'response.output_text.delta'));
  edge.proc.child.kill('SIGTERM');
  expect(await idle.closed).toEqual({ code: 1001, reason: 'the edge is shutting down' });
  const response = finalResponse(await events);
  expect(response.status).toBe('completed');
  expect(busy.events.filter((event) => event.type === 'response.output_text.delta')).toHaveLength(10);
  expect(await busy.closed).toEqual({ code: 1001, reason: 'the edge is shutting down' });
  expect(await edge.proc.exited).toBe(0);
});

it('a response still running at the shutdown deadline fails in band, then the connection closes with 1001', async () => {
  const edge = await servedEdge(['--shutdown-deadline-ms', '500']);
  const busy = await SocketClient.open(edge);
  const events = busy.create({ model: 'sim-model', input: 'too slow to finish', store: false });
  await busy.waitFor((all) => all.some((event) => event.type === 'response.output_text.delta'));
  edge.proc.child.kill('SIGTERM');
  const last = (await events).at(-1)!;
  expect(last.type).toBe('response.failed');
  expect((last.response as { error: { message: string } }).error.message).toContain('shutting down');
  expect((await busy.closed).code).toBe(1001);
  expect(await edge.proc.exited).toBe(0);
});

it('a message over websocket.maxMessageBytes closes the connection with 1009', async () => {
  const edge = await startEdge({
    args: ['--websocket-max-message-bytes', '2048'],
    env: { IOP_RESPONSES_STORE_KIND: 'memory' },
  });
  const client = await SocketClient.open(edge);
  client.send({ type: 'response.create', model: 'sim-model', input: 'x'.repeat(4096) });
  expect((await client.closed).code).toBe(1009);
});

it('the edge-wide cap refuses with 503 whatever the key; websocket.enabled=false answers 426', async () => {
  const edge = await startEdge({
    args: ['--api-keys', `${API_KEY},${OTHER_KEY}`, '--websocket-max-connections', '2'],
    env: { IOP_RESPONSES_STORE_KIND: 'memory' },
  });
  const one = await SocketClient.open(edge, API_KEY);
  const two = await SocketClient.open(edge, OTHER_KEY);
  const refused = await SocketClient.refused(edge, OTHER_KEY);
  expect(refused.status).toBe(503);
  expect(refused.body).toMatchObject({ error: { message: expect.stringContaining('2 WebSocket connections') } });
  await Promise.all([one.close(), two.close()]);

  const off = await startEdge({ args: ['--websocket-enabled', 'false'], env: { IOP_RESPONSES_STORE_KIND: 'memory' } });
  const turnedOff = await SocketClient.refused(off);
  expect(turnedOff.status).toBe(426);
  expect(turnedOff.body).toMatchObject({ error: { message: expect.stringContaining('POST /v1/responses') } });
});

it('pings: a peer that answers stays open, one that does not is terminated after the next ping', async () => {
  const edge = await startEdge({
    args: ['--websocket-ping-interval-ms', '300'],
    env: { IOP_RESPONSES_STORE_KIND: 'memory' },
  });
  const answering = await SocketClient.open(edge);
  let pings = 0;
  answering.ws.on('ping', () => pings++);
  const silent = new WebSocket(`${edge.url.replace(/^http/, 'ws')}/v1/responses`, {
    headers: { authorization: `Bearer ${API_KEY}` },
    autoPong: false,
  });
  const opened = Date.now();
  const closed = new Promise<number>((resolve) => silent.once('close', (code) => resolve(code)));
  // Terminated without a close frame: 1006 at the client, after the first ping went unanswered.
  expect(await closed).toBe(1006);
  expect(Date.now() - opened).toBeGreaterThanOrEqual(500);
  expect(answering.ws.readyState).toBe(WebSocket.OPEN);
  expect(pings).toBeGreaterThanOrEqual(2);
  await answering.close();
});
