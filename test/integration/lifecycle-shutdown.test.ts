/**
 * Edge graceful shutdown (SIGTERM): a stream in flight completes and new connections are refused;
 * requests still queued for a slot get a 503 (Anthropic 529) with Retry-After at once, so clients
 * retry on another edge; a stream still running at the deadline ends with an in-band OpenAI error
 * event, not a silent cut.
 */
import { API_KEY, eventually, simRequests, startAgent, startEdge, startSim, stopAll } from './harness';
import { ask, openStream, readChatStream } from './lifecycle-helpers';

afterEach(stopAll);

describe('edge shutdown', () => {
  it('SIGTERM during a stream: the stream completes, a new connection is refused, the edge exits', async () => {
    // 20 tokens at 200 ms: the shutdown window lasts ~4 s, time for a late agent to try to join.
    const sim = await startSim(['--models', 'sim-model', '--output-tokens', '20', '--itl-ms', '200']);
    const edge = await startEdge({ args: ['--shutdown-deadline-ms', '10000'] });
    await startAgent({ tunnelPort: edge.tunnelPort, id: 'agent-s', backendUrl: sim.url, models: ['sim-model'] });
    const stream = await openStream(edge.baseURL);
    expect(stream.status).toBe(200);
    edge.proc.child.kill('SIGTERM');
    await edge.proc.waitFor((line) => line.msg === 'edge shutting down');
    await expect(ask(edge.baseURL)).rejects.toThrow();
    // An agent that tries to join now is refused (UNAVAILABLE: it retries elsewhere or later).
    await startAgent({
      tunnelPort: edge.tunnelPort,
      id: 'agent-late',
      backendUrl: sim.url,
      models: ['sim-model'],
      waitRegistered: false,
    });
    await edge.proc.waitFor(
      (line) => line.msg === 'agent refused: the edge is shutting down' && line.agentId === 'agent-late',
      5_000,
    );
    expect(readChatStream(await stream.body)).toEqual({ deltas: 20, done: true, error: undefined });
    expect(await edge.proc.exited).toBe(0);
  });

  it('SIGTERM with requests queued for the only slot: they get 503 / 529 with Retry-After at once, none is started', async () => {
    const sim = await startSim(['--models', 'sim-model', '--output-tokens', '20', '--itl-ms', '75']);
    const edge = await startEdge({ args: ['--shutdown-deadline-ms', '10000'] });
    await startAgent({
      tunnelPort: edge.tunnelPort,
      id: 'agent-s',
      backendUrl: sim.url,
      models: ['sim-model'],
      args: ['--max-concurrency', '1'],
    });
    const stream = await openStream(edge.baseURL);
    expect(stream.status).toBe(200);
    const body = { model: 'sim-model', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] };
    const post = (path: string, headers: Record<string, string>) =>
      fetch(`${edge.baseURL}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify(body),
      });
    const chat = post('/chat/completions', { authorization: `Bearer ${API_KEY}` });
    const messages = post('/messages', { 'x-api-key': API_KEY, 'anthropic-version': '2023-06-01' });
    await eventually(
      async () => /iop_pool_queued\{group="sim-model"\} 2/.test(await (await fetch(`${edge.url}/metrics`)).text()),
      5_000,
    );
    const signalledAt = performance.now();
    edge.proc.child.kill('SIGTERM');
    const [chatResponse, messagesResponse] = await Promise.all([chat, messages]);
    // At once: long before the running stream (1.5 s) or the deadline (10 s) ends.
    expect(performance.now() - signalledAt).toBeLessThan(1_000);
    expect(chatResponse.status).toBe(503);
    expect(chatResponse.headers.get('retry-after')).toBe('1');
    expect(await chatResponse.json()).toMatchObject({ error: { message: expect.stringContaining('shutting down') } });
    expect(messagesResponse.status).toBe(529);
    expect(messagesResponse.headers.get('retry-after')).toBe('1');
    expect(await messagesResponse.json()).toMatchObject({
      type: 'error',
      error: { type: 'overloaded_error', message: expect.stringContaining('shutting down') },
    });
    expect(readChatStream(await stream.body)).toEqual({ deltas: 20, done: true, error: undefined });
    expect(await edge.proc.exited).toBe(0);
    // The sim served the stream alone: neither queued request was started.
    expect((await simRequests(sim)).filter((record) => record.path === '/v1/chat/completions')).toHaveLength(1);
  });

  it('a stream still running at the deadline ends with an in-band error event', async () => {
    const sim = await startSim(['--models', 'sim-model', '--output-tokens', '100', '--itl-ms', '50']);
    const edge = await startEdge({ args: ['--shutdown-deadline-ms', '500'] });
    await startAgent({ tunnelPort: edge.tunnelPort, id: 'agent-s', backendUrl: sim.url, models: ['sim-model'] });
    const stream = await openStream(edge.baseURL);
    edge.proc.child.kill('SIGTERM');
    const result = readChatStream(await stream.body);
    expect(result.done).toBe(false);
    expect(result.deltas).toBeGreaterThan(0);
    expect(result.deltas).toBeLessThan(100);
    expect(result.error).toMatchObject({ message: expect.stringContaining('shutting down'), type: expect.any(String) });
    expect(await edge.proc.exited).toBe(0);
  });
});
