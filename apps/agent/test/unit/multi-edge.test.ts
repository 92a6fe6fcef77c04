/**
 * High availability: one agent, several edges (`--edge a,b`) — one Control session per edge, runs
 * from any, drain/deregister per edge, a lost edge reconnected with jitter.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ProviderTunnelFrame_Kind as Kind } from '@iop/proto';
import { Backoff } from '../../src/backoff.js';
import { resolveAgentOptions } from '../../src/options.js';
import { startAgent, type AgentHandle } from '../../src/start-agent.js';
import { captureLogs } from './helpers/log-capture';
import { TestEdge, waitFor } from './helpers/test-edge';

const SSE = 'data: {"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}\n\ndata: [DONE]\n\n';

async function startBackend(): Promise<{ server: http.Server; url: string }> {
  const server = http.createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      if (request.url === '/v1/models') {
        response
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ object: 'list', data: [{ id: 'm' }] }));
        return;
      }
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      setTimeout(() => response.end(SSE), 20);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

describe('agent with several edges', () => {
  let edges: TestEdge[];
  let backend: Awaited<ReturnType<typeof startBackend>>;
  let agent: AgentHandle | undefined;
  let logs: ReturnType<typeof captureLogs>;

  beforeEach(async () => {
    edges = [new TestEdge({ joinToken: 'secret' }), new TestEdge({ joinToken: 'secret' })];
    for (const edge of edges) await edge.start();
    backend = await startBackend();
    logs = captureLogs('debug');
    agent = await startAgent({
      edgeUrl: edges.map((edge) => edge.url).join(','),
      joinToken: 'secret',
      agentId: 'ha-1',
      backend: 'openai',
      backendUrl: backend.url,
      logger: logs.logger,
      reconnectBaseMs: 20,
      reconnectJitterMs: 50,
    });
    await waitFor(() => edges.every((edge) => edge.registrations.length === 1), 5_000, 'registered on both edges');
  });

  afterEach(async () => {
    await agent?.close();
    agent = undefined;
    for (const edge of edges) await edge.stop();
    backend.server.closeAllConnections();
    await new Promise((resolve) => backend.server.close(resolve));
  });

  test("registers on every edge and serves runs from each on that edge's Run call", async () => {
    expect(edges.map((edge) => edge.registrations[0]!.agentId)).toEqual(['ha-1', 'ha-1']);
    edges[0]!.assign({ runId: 'from-a' });
    edges[1]!.assign({ runId: 'from-b' });
    await waitFor(
      () => edges[0]!.runs.get('from-a')?.ended === true && edges[1]!.runs.get('from-b')?.ended === true,
      5_000,
      'both runs',
    );
    expect(edges[0]!.runs.get('from-a')!.frames.map((frame) => frame.kind)).toEqual([
      Kind.ACCEPTED,
      Kind.RESPONSE_START,
      Kind.BODY,
      Kind.END,
    ]);
    expect(edges[0]!.runs.has('from-b')).toBe(false);
    expect(edges[1]!.runs.has('from-a')).toBe(false);
  });

  test('deregistering from one edge leaves the other served; the agent keeps running', async () => {
    edges[0]!.send({ case: 'drain', value: { drain: true, deregister: true } });
    await waitFor(() => edges[0]!.controlEnded === 1, 3_000, 'control A closed');
    edges[1]!.assign({ runId: 'still-b' });
    await waitFor(() => edges[1]!.runs.get('still-b')?.ended === true, 5_000, 'run on B');
    expect(edges[1]!.runs.get('still-b')!.frames.at(-1)!.kind).toBe(Kind.END);
    expect(agent!.agent.links.map((link) => link.isStopped)).toEqual([true, false]);
    edges[1]!.send({ case: 'drain', value: { drain: true, deregister: true } });
    await agent!.stopped;
  });

  test('a restarted edge gets the agent back, with its models, while the other keeps serving', async () => {
    await edges[1]!.stop();
    await waitFor(
      () => logs.lines.some((line) => line.msg === 'reconnecting' && line.edge === edges[1]!.url),
      5_000,
      'reconnecting to B',
    );
    edges[0]!.assign({ runId: 'a-during' });
    await waitFor(() => edges[0]!.runs.get('a-during')?.ended === true, 5_000, 'run on A while B is down');
    await edges[1]!.start();
    await waitFor(() => edges[1]!.registrations.length === 2, 10_000, 'registered again on B');
    expect(edges[1]!.registrations[1]!.models.map((model) => model.id)).toEqual(['m']);
    expect(edges[0]!.registrations).toHaveLength(1);
    edges[1]!.assign({ runId: 'b-after' });
    await waitFor(() => edges[1]!.runs.get('b-after')?.ended === true, 5_000, 'run on B after restart');
  }, 20_000);
});

describe('edge list and reconnect jitter', () => {
  test('--edge takes a comma-separated list (duplicates dropped); each URL is checked', () => {
    const options = resolveAgentOptions({ edgeUrl: 'http://a:8081, https://b:8081,http://a:8081' });
    expect(options.edgeUrls).toEqual(['http://a:8081', 'https://b:8081']);
    expect(options.edgeUrl).toBe('http://a:8081');
    expect(options.reconnectJitterMs).toBe(1_000);
    expect(() => resolveAgentOptions({ edgeUrl: 'http://a:8081,grpc://b' })).toThrow(
      'edgeUrls[1] must match pattern "^https?://"',
    );
  });

  test('after a lost connection the delay adds a uniform draw in [0, lostConnectionJitterMs)', () => {
    expect(new Backoff({ lostConnectionJitterMs: 1_000, random: () => 0.5 }).nextAfterLostConnection()).toBe(500 + 125);
    expect(new Backoff({ lostConnectionJitterMs: 1_000, random: () => 0 }).nextAfterLostConnection()).toBe(0);
    expect(new Backoff({ lostConnectionJitterMs: 1_000, random: () => 0.999999 }).nextAfterLostConnection()).toBe(
      999 + 249,
    );
  });
});
