/**
 * Edge graceful shutdown (SIGTERM): a stream in flight completes and new connections are refused;
 * a stream still running at the deadline ends with an in-band OpenAI error event, not a silent cut.
 */
import { startAgent, startEdge, startSim, stopAll } from './harness';
import { ask, openStream, readChatStream } from './lifecycle-helpers';

afterEach(stopAll);

describe('edge shutdown', () => {
  it('SIGTERM during a stream: the stream completes, a new connection is refused, the edge exits', async () => {
    const sim = await startSim(['--models', 'sim-model', '--output-tokens', '20', '--itl-ms', '75']);
    const edge = await startEdge({ args: ['--shutdown-deadline-ms', '10000'] });
    await startAgent({ tunnelPort: edge.tunnelPort, id: 'agent-s', backendUrl: sim.url, models: ['sim-model'] });
    const stream = await openStream(edge.baseURL);
    expect(stream.status).toBe(200);
    edge.proc.child.kill('SIGTERM');
    await edge.proc.waitFor((line) => line.msg === 'edge shutting down');
    await expect(ask(edge.baseURL)).rejects.toThrow();
    expect(readChatStream(await stream.body)).toEqual({ deltas: 20, done: true, error: undefined });
    expect(await edge.proc.exited).toBe(0);
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
