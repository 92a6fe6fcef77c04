/**
 * High availability: one agent serves two edges (`--edge a,b`); both edges route to it; after one
 * edge restarts the agent registers there again (its models restored) while the other keeps serving.
 */
import { eventually, startAgent, startEdge, startSim, stopAll } from './harness';
import { ask } from './lifecycle-helpers';

afterEach(stopAll);

describe('agent on two edges', () => {
  it('both edges serve through one agent; a restarted edge gets it back', async () => {
    const sim = await startSim(['--models', 'sim-model', '--output-tokens', '4', '--itl-ms', '5']);
    const first = await startEdge();
    const second = await startEdge();
    const agent = await startAgent({
      tunnelPort: first.tunnelPort,
      id: 'agent-ha',
      backendUrl: sim.url,
      models: ['sim-model'],
      args: [
        '--edge',
        `http://127.0.0.1:${first.tunnelPort},http://127.0.0.1:${second.tunnelPort}`,
        '--reconnect-jitter-ms',
        '200',
      ],
    });
    const registered = () => agent.lines.filter((line) => line.msg === 'registered');
    await eventually(() => registered().length === 2);
    expect(new Set(registered().map((line) => line.edge)).size).toBe(2);
    expect(await ask(first.baseURL)).toEqual({ status: 200, agent: 'agent-ha' });
    expect(await ask(second.baseURL)).toEqual({ status: 200, agent: 'agent-ha' });

    await second.proc.kill('SIGKILL');
    expect(await ask(first.baseURL)).toEqual({ status: 200, agent: 'agent-ha' });
    const restarted = await startEdge({ port: second.port, tunnelPort: second.tunnelPort });
    await eventually(() => registered().length === 3, 20_000);
    expect(registered()[2]!.edge).toBe(`http://127.0.0.1:${second.tunnelPort}`);
    expect(await ask(restarted.baseURL)).toEqual({ status: 200, agent: 'agent-ha' });
    expect(await ask(first.baseURL)).toEqual({ status: 200, agent: 'agent-ha' });
  });
});
