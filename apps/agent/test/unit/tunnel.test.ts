import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ProviderTunnelFrame_Kind as Kind, RunErrorCode } from '@iop/proto';
import { startAgent, type AgentHandle } from '../../src/start-agent.js';
import { captureLogs } from './helpers/log-capture';
import { TestEdge, waitFor } from './helpers/test-edge';

const SSE_PARTS = [
  'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":null}\n\n',
  'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}],"usage":null}\n\n',
  'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":11,"completion_tokens":2,"total_tokens":13,"prompt_tokens_details":{"cached_tokens":4},"completion_tokens_details":{"reasoning_tokens":1}}}\n\n',
  'data: [DONE]\n\n',
];

interface BackendCall {
  headers: http.IncomingHttpHeaders;
  path: string;
  body: string;
  closedAt?: number;
}

/**
 * A small OpenAI-like backend: `/v1/chat/completions` streams SSE_PARTS with 20 ms gaps; `/hang` sends headers then
 * nothing.
 */
async function startBackend(): Promise<{ server: http.Server; url: string; calls: BackendCall[] }> {
  const calls: BackendCall[] = [];
  const server = http.createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => {
      const call: BackendCall = { headers: request.headers, path: request.url ?? '', body };
      calls.push(call);
      response.on('close', () => (call.closedAt = performance.now()));
      if (request.url === '/v1/models') {
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ object: 'list', data: [{ id: 'Qwen/Qwen3-8B', max_model_len: 32768 }] }));
        return;
      }
      if (request.url === '/tokenize') {
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end('{"count":1,"tokens":[1],"max_model_len":32768}');
        return;
      }
      if (request.url === '/metrics') {
        response.writeHead(200, { 'content-type': 'text/plain' });
        response.end(
          '# HELP x\nvllm:kv_cache_usage_perc{model_name="m"} 0.25\nvllm:num_requests_waiting{model_name="m"} 3\n',
        );
        return;
      }
      if (request.url === '/slow') {
        setTimeout(() => response.writeHead(200, { 'content-type': 'application/json' }).end('{}'), 2_000).unref();
        return;
      }
      if (request.url === '/hang') {
        response.writeHead(200, { 'content-type': 'text/event-stream' });
        response.write('data: {"choices":[]}\n\n');
        return; // never ends: the test cancels
      }
      response.writeHead(200, { 'content-type': 'text/event-stream', 'x-backend': 'yes' });
      let index = 0;
      const next = (): void => {
        if (index === SSE_PARTS.length) return void response.end();
        response.write(SSE_PARTS[index++]);
        setTimeout(next, 20);
      };
      next();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, calls };
}

describe('agent tunnel client (openai backend)', () => {
  let edge: TestEdge;
  let backend: Awaited<ReturnType<typeof startBackend>>;
  let agent: AgentHandle | undefined;
  let logs: ReturnType<typeof captureLogs>;

  beforeEach(async () => {
    edge = new TestEdge({ joinToken: 'secret' });
    await edge.start();
    backend = await startBackend();
    logs = captureLogs('debug');
  });

  afterEach(async () => {
    if (process.env.DEBUG_AGENT_LOGS) console.log(JSON.stringify(logs.lines, null, 1).slice(0, 3000));
    await agent?.close();
    agent = undefined;
    await edge.stop();
    backend.server.closeAllConnections();
    await new Promise((resolve) => backend.server.close(resolve));
  });

  async function start(extra: Record<string, unknown> = {}): Promise<AgentHandle> {
    agent = await startAgent({
      edgeUrl: edge.url,
      joinToken: 'secret',
      agentId: 'gpu-1',
      backend: 'openai',
      backendUrl: backend.url,
      backendApiKey: 'backend-key',
      maxConcurrency: 2,
      labels: 'zone=a,gpu=h100',
      logger: logs.logger,
      reconnectBaseMs: 20,
      ...extra,
    });
    await agent.agent.registered;
    return agent;
  }

  test('registers with id, token, discovered models, capacity, labels, version, backend, capabilities', async () => {
    await start();
    const register = edge.registrations[0]!;
    expect(register.agentId).toBe('gpu-1');
    expect(register.joinToken).toBe('secret');
    expect(register.models.map((model) => [model.id, model.contextLength])).toEqual([['Qwen/Qwen3-8B', 32768]]);
    expect(register.maxConcurrency).toBe(2);
    expect(register.labels).toEqual({ zone: 'a', gpu: 'h100' });
    expect(register.agentVersion).toBe('0.1.0');
    expect(register.backend).toBe('openai');
    expect(register.capabilities).toEqual(['tokenize']);
    const registered = logs.lines.find((line) => line.msg === 'registered')!;
    expect(registered.session).toBe('sess_1…'); // a prefix: the whole id is the Run credential
    // Heartbeats flow at the edge's interval and carry vLLM's load figures from /metrics.
    await waitFor(() => edge.heartbeats.length >= 2, 2_000, 'heartbeats');
    expect(edge.heartbeats[0]).toMatchObject({
      inFlight: 0,
      queued: 0,
      draining: false,
      kvCacheUsage: 0.25,
      backendWaiting: 3,
    });
  });

  test('relays a run: RESPONSE_START, BODY with the exact bytes, USAGE, END; client credentials stripped', async () => {
    await start();
    edge.assign({
      runId: 'r1',
      body: '{"model":"m","stream":true}',
      headers: {
        'content-type': 'application/json',
        authorization: 'Bearer client',
        'x-api-key': 'client',
        cookie: 'a=b',
        'x-request-id': 'req_r1',
      },
    });
    await waitFor(() => edge.runs.get('r1')?.ended === true, 5_000, 'run end');
    const [accepted, ...frames] = edge.runs.get('r1')!.frames;
    // ACCEPTED comes first, before the backend answers (the edge's run-accepted clock).
    expect(accepted).toMatchObject({ runId: 'r1', kind: Kind.ACCEPTED });
    expect(frames[0]).toMatchObject({ runId: 'r1', kind: Kind.RESPONSE_START, status: 200 });
    expect(frames[0]!.headers['content-type']).toBe('text/event-stream');
    expect(frames[0]!.headers['x-backend']).toBe('yes');
    expect(frames[0]!.headers['transfer-encoding']).toBeUndefined();
    const bodies = frames.filter((frame) => frame.kind === Kind.BODY);
    expect(Buffer.concat(bodies.map((frame) => frame.body)).toString()).toBe(SSE_PARTS.join(''));
    expect(bodies.length).toBeGreaterThanOrEqual(2); // slices relayed as they came, not buffered
    const tail = frames.slice(-2);
    expect(tail[0]).toMatchObject({
      kind: Kind.USAGE,
      usage: { promptTokens: 11, completionTokens: 2, cachedTokens: 4, reasoningTokens: 1 },
    });
    expect(tail[1]).toMatchObject({ kind: Kind.END, runId: 'r1' });
    expect(frames.every((frame) => frame.runId === 'r1')).toBe(true);
    const call = backend.calls.find((entry) => entry.path === '/v1/chat/completions')!;
    expect(call.body).toBe('{"model":"m","stream":true}');
    expect(call.headers.authorization).toBe('Bearer backend-key');
    expect(call.headers['x-api-key']).toBeUndefined();
    expect(call.headers.cookie).toBeUndefined();
    expect(call.headers['x-request-id']).toBe('req_r1');
    const runLog = logs.lines.find((line) => line.msg === 'run ended')!;
    expect(runLog).toMatchObject({ requestId: 'req_r1', runId: 'r1', status: 200 });
  });

  test('CancelRun aborts the backend request within 100 ms and ends the run with ERROR cancelled', async () => {
    await start();
    edge.assign({ runId: 'r2', path: '/hang' });
    await waitFor(() => (edge.runs.get('r2')?.frames.length ?? 0) >= 2, 5_000, 'first body');
    const cancelledAt = performance.now();
    edge.send({ case: 'cancel', value: { runId: 'r2', reason: 'client disconnected' } });
    const call = backend.calls.find((entry) => entry.path === '/hang')!;
    await waitFor(() => call.closedAt !== undefined, 1_000, 'backend socket close');
    expect(call.closedAt! - cancelledAt).toBeLessThan(100);
    await waitFor(() => edge.runs.get('r2')?.ended === true, 2_000, 'run end');
    expect(edge.runs.get('r2')!.frames.at(-1)).toMatchObject({ kind: Kind.ERROR, errorCode: RunErrorCode.CANCELLED });
    await waitFor(() => agent!.agent.inFlight === 0, 1_000, 'run released');
  });

  test('a Run call failed by the edge aborts the backend request', async () => {
    await start();
    edge.failRunAfterFirstBody.add('r3');
    edge.assign({ runId: 'r3', path: '/hang' });
    await waitFor(() => backend.calls.some((entry) => entry.path === '/hang'), 5_000, 'backend call');
    const call = backend.calls.find((entry) => entry.path === '/hang')!;
    await waitFor(() => call.closedAt !== undefined, 2_000, 'backend socket close');
    await waitFor(() => agent!.agent.inFlight === 0, 1_000, 'run released');
  });

  test('an unreachable backend ends the run with ERROR connect_failed', async () => {
    await start({ backendUrl: 'http://127.0.0.1:1', models: 'a,b' });
    expect(edge.registrations[0]!.models.map((model) => model.id)).toEqual(['a', 'b']);
    edge.assign({ runId: 'r4' });
    await waitFor(() => edge.runs.get('r4')?.ended === true, 5_000, 'run end');
    expect(edge.runs.get('r4')!.frames).toEqual([
      expect.objectContaining({ kind: Kind.ACCEPTED }),
      expect.objectContaining({ kind: Kind.ERROR, errorCode: RunErrorCode.CONNECT_FAILED }),
    ]);
  });

  test('first-byte timeout (from the assignment) and idle timeout end the run with their codes', async () => {
    await start({ idleTimeoutMs: 150 });
    edge.assign({ runId: 'r5', path: '/slow', firstByteTimeoutMs: 150 });
    edge.assign({ runId: 'r6', path: '/hang' });
    await waitFor(() => edge.runs.get('r5')?.ended === true && edge.runs.get('r6')?.ended === true, 3_000, 'runs end');
    expect(edge.runs.get('r5')!.frames).toEqual([
      expect.objectContaining({ kind: Kind.ACCEPTED }),
      expect.objectContaining({ kind: Kind.ERROR, errorCode: RunErrorCode.FIRST_BYTE_TIMEOUT }),
    ]);
    const r6 = edge.runs.get('r6')!.frames;
    expect(r6.map((frame) => frame.kind)).toEqual([Kind.ACCEPTED, Kind.RESPONSE_START, Kind.BODY, Kind.ERROR]);
    expect(r6[3]!.errorCode).toBe(RunErrorCode.IDLE_TIMEOUT);
    const hang = backend.calls.find((entry) => entry.path === '/hang')!;
    await waitFor(() => hang.closedAt !== undefined, 1_000, 'backend aborted');
  });

  test('drain rejects new runs, keeps in-flight ones, reports draining; undrain takes runs again', async () => {
    await start();
    edge.assign({ runId: 'long', path: '/hang' });
    await waitFor(() => agent!.agent.inFlight === 1, 2_000, 'run in flight');
    edge.send({ case: 'drain', value: { drain: true, deregister: false } });
    await waitFor(
      () => edge.heartbeats.some((beat) => beat.draining && beat.inFlight === 1),
      2_000,
      'draining heartbeat',
    );
    edge.assign({ runId: 'new' });
    await waitFor(() => edge.rejections.length === 1, 2_000, 'rejection');
    expect(edge.rejections[0]).toMatchObject({ runId: 'new', reason: 'draining' });
    expect(agent!.agent.inFlight).toBe(1);
    edge.send({ case: 'drain', value: { drain: false, deregister: false } });
    await waitFor(() => !agent!.agent.isDraining, 2_000, 'undrain');
    edge.assign({ runId: 'again' });
    await waitFor(() => edge.runs.get('again')?.ended === true, 5_000, 'run after undrain');
    expect(edge.runs.get('again')!.frames.at(-1)!.kind).toBe(Kind.END);
  });

  test('at capacity: the assignment beyond max_concurrency is rejected', async () => {
    await start({ maxConcurrency: 1 });
    edge.assign({ runId: 'a1', path: '/hang' });
    edge.assign({ runId: 'a2', path: '/hang' });
    await waitFor(() => edge.rejections.length === 1, 2_000, 'rejection');
    expect(edge.rejections[0]).toMatchObject({ runId: 'a2', reason: 'at_capacity' });
  });

  test('an assignment reusing the slot of a run the edge just cancelled waits for that run to stop, not rejected', async () => {
    await start({ maxConcurrency: 1 });
    edge.assign({ runId: 'c1', path: '/hang' });
    await waitFor(() => (edge.runs.get('c1')?.frames.length ?? 0) >= 2, 5_000, 'first body');
    // The edge counts c1's slot free the moment it cancels c1, and assigns it at once.
    edge.send({ case: 'cancel', value: { runId: 'c1', reason: 'client disconnected' } });
    edge.assign({ runId: 'c2' });
    await waitFor(() => edge.runs.get('c2')?.ended === true, 5_000, 'c2 served');
    expect(edge.rejections).toEqual([]);
    expect(edge.runs.get('c1')!.frames.at(-1)).toMatchObject({ kind: Kind.ERROR, errorCode: RunErrorCode.CANCELLED });
    expect(edge.runs.get('c2')!.frames.at(-1)!.kind).toBe(Kind.END);
  });

  test('deregister closes Control once in-flight runs finish, and the agent stops', async () => {
    await start();
    edge.assign({ runId: 'd1' });
    edge.send({ case: 'drain', value: { drain: true, deregister: true } });
    await agent!.stopped;
    expect(edge.runs.get('d1')!.frames.at(-1)!.kind).toBe(Kind.END);
    await waitFor(() => edge.controlEnded === 1, 2_000, 'control closed');
    expect(logs.lines.some((line) => line.msg === 'deregistered')).toBe(true);
  });

  test('shutdown (SIGTERM): drains, lets in-flight runs finish, cancels what outlives the deadline, then stops', async () => {
    await start();
    edge.assign({ runId: 's1' }); // ~80 ms of SSE
    edge.assign({ runId: 's2', path: '/hang' });
    await waitFor(() => agent!.agent.inFlight === 2, 2_000, 'two runs');
    const startedAt = performance.now();
    await agent!.shutdown(400);
    expect(performance.now() - startedAt).toBeGreaterThanOrEqual(350);
    expect(edge.runs.get('s1')!.frames.at(-1)!.kind).toBe(Kind.END);
    expect(edge.runs.get('s2')!.frames.at(-1)).toMatchObject({ kind: Kind.ERROR, errorCode: RunErrorCode.CANCELLED });
    expect(edge.heartbeats.some((beat) => beat.draining)).toBe(true);
    await agent!.stopped;
    await waitFor(() => edge.controlEnded === 1, 2_000, 'control closed');
  });

  test('reconnects and registers again after the edge restarts', async () => {
    await start();
    await edge.stop();
    await waitFor(() => logs.lines.some((line) => line.msg === 'reconnecting'), 5_000, 'reconnecting');
    await edge.start();
    await waitFor(() => edge.registrations.length === 2, 10_000, 'second registration');
    await waitFor(() => logs.lines.filter((line) => line.msg === 'registered').length === 2, 2_000, 'registered twice');
    edge.assign({ runId: 'after' });
    await waitFor(() => edge.runs.get('after')?.ended === true, 5_000, 'run after reconnect');
  }, 20_000);

  test('a wrong join token is logged at error level and retried with backoff', async () => {
    agent = await startAgent({
      edgeUrl: edge.url,
      joinToken: 'wrong',
      backend: 'openai',
      backendUrl: backend.url,
      logger: logs.logger,
      reconnectBaseMs: 20,
      reconnectCapMs: 50,
    });
    await waitFor(() => logs.lines.filter((line) => line.level === 50).length >= 2, 5_000, 'two error lines');
    const error = logs.lines.find((line) => line.level === 50)!;
    expect(error.code).toBe('Unauthenticated');
    expect(String(error.msg)).toContain('join token');
    expect(edge.registrations).toHaveLength(0);
  });
});
