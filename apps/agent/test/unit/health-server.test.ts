/**
 * The agent's probe port: /readyz is 503 with its reason until the agent is registered with an
 * edge; a port asked for explicitly that is taken fails the start naming the flag, while a
 * default port that is taken only costs the metrics (logged).
 */
import net from 'node:net';
import { startAgent, type AgentHandle } from '../../src/start-agent.js';
import { captureLogs } from './helpers/log-capture';

const base = {
  edgeUrl: 'http://127.0.0.1:1',
  joinToken: 't',
  backend: 'openai',
  backendUrl: 'http://127.0.0.1:1',
  models: 'm',
  metricsHost: '127.0.0.1',
} as const;
let handle: AgentHandle | undefined;

afterEach(async () => {
  await handle?.close();
  handle = undefined;
});

async function taken(): Promise<{ port: number; close(): void }> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as net.AddressInfo).port, close: () => server.close() };
}

it('answers /healthz at once and /readyz 503 with its reason while no edge has it registered', async () => {
  const logs = captureLogs();
  handle = await startAgent({ ...base, metricsPort: 0, logger: logs.logger });
  const url = `http://127.0.0.1:${handle.metricsPort}`;
  expect((await fetch(`${url}/healthz`)).status).toBe(200);
  const ready = await fetch(`${url}/readyz`);
  expect(ready.status).toBe(503);
  expect(await ready.json()).toEqual({
    status: 'not registered with any edge',
    edges: [{ edge: 'http://127.0.0.1:1', registered: false }],
    inFlight: 0,
  });
  handle.setDraining(true);
  expect(((await (await fetch(`${url}/readyz`)).json()) as { status: string }).status).toBe('draining');
  const metrics = await (await fetch(`${url}/metrics`)).text();
  expect(metrics).toMatch(/^iop_agent_draining 1$/m);
  expect(metrics).toMatch(/^iop_agent_edge_registered\{edge="http:\/\/127\.0\.0\.1:1"\} 0$/m);
});

it('an explicit metrics port that is taken fails the start, naming the address and the flag', async () => {
  const blocker = await taken();
  try {
    await expect(startAgent({ ...base, metricsPort: blocker.port, logger: captureLogs().logger })).rejects.toThrow(
      `cannot listen on 127.0.0.1:${blocker.port} for /healthz and /metrics: the address is in use by another process; choose another with --metrics-port (IOP_METRICS_PORT) or turn it off with --metrics-port off`,
    );
  } finally {
    blocker.close();
  }
});

it('a default metrics port that is taken is logged and the agent runs without it', async () => {
  const blocker = await taken();
  const logs = captureLogs();
  try {
    handle = await startAgent({ ...base, metricsPort: blocker.port, metricsPortRequired: false, logger: logs.logger });
    expect(handle.metricsPort).toBeUndefined();
    expect(
      logs.lines.some(
        (line) => line.msg === 'no /healthz and /metrics port: the default one is taken; set --metrics-port',
      ),
    ).toBe(true);
    expect(logs.lines.find((line) => line.msg === 'agent starting')).toMatchObject({
      backend: 'openai',
      maxConcurrency: 16,
    });
  } finally {
    blocker.close();
  }
});
