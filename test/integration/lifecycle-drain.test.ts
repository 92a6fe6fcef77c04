/**
 * Agent drain: a stream in flight on the drained agent completes intact, new requests go to the
 * other agent at once (503 when none is left), and a deregistering agent leaves the pool and exits
 * only after its stream finished. Via the admin API and via SIGTERM on the agent.
 */
import { API_KEY, eventually, startAgent, startEdge, startSim, stopAll, type EdgeHandle, type Proc } from './harness';
import { ADMIN_KEY, admin, ask, openStream, readChatStream } from './lifecycle-helpers';

afterEach(stopAll);

const TOKENS = 30;

describe('agent drain', () => {
  let edge: EdgeHandle;
  let agents: Record<string, Proc>;

  beforeEach(async () => {
    const sim = await startSim(['--models', 'sim-model', '--output-tokens', String(TOKENS), '--itl-ms', '100']);
    edge = await startEdge({ args: ['--admin-keys', ADMIN_KEY] });
    agents = {
      'agent-a': await startAgent({
        tunnelPort: edge.tunnelPort,
        id: 'agent-a',
        backendUrl: sim.url,
        models: ['sim-model'],
      }),
      'agent-b': await startAgent({
        tunnelPort: edge.tunnelPort,
        id: 'agent-b',
        backendUrl: sim.url,
        models: ['sim-model'],
      }),
    };
  });

  it('the admin API needs an admin key, and an admin key does not open /v1', async () => {
    expect((await admin(edge.url, 'GET', '/admin/agents', null)).status).toBe(401);
    expect((await admin(edge.url, 'GET', '/admin/agents', API_KEY)).status).toBe(401);
    expect((await ask(edge.baseURL, ADMIN_KEY)).status).toBe(401);
    const { status, body } = await admin(edge.url, 'GET', '/admin/agents');
    expect(status).toBe(200);
    const ids = body.data.map((agent: { id: string }) => agent.id).sort();
    expect(ids).toEqual(['agent-a', 'agent-b']);
    const view = body.data[0]!;
    expect(view).toMatchObject({
      models: [{ id: 'sim-model', contextLength: null }],
      load: { inFlight: 0, queued: 0 },
      maxConcurrency: 16,
      health: { status: 'ok', pool: null },
      drain: { draining: false, deregistering: false },
      backend: 'openai',
      runsServed: 0,
    });
    expect(view.session).toMatch(/^ses_\w{6}…$/); // a prefix: the whole id is a credential
    expect(typeof view.version).toBe('string');
    expect(view.connectedSince).toBeLessThanOrEqual(Date.now());
    expect((await admin(edge.url, 'POST', '/admin/agents/nope/drain')).status).toBe(404);
    expect((await admin(edge.url, 'POST', '/admin/agents/agent-a/drain?deregister=maybe')).status).toBe(400);
  });

  it('admin drain + deregister: the stream completes, new requests go elsewhere, the agent leaves after', async () => {
    const stream = await openStream(edge.baseURL);
    expect(stream.status).toBe(200);
    const drained = stream.agent!;
    const other = drained === 'agent-a' ? 'agent-b' : 'agent-a';
    const { status, body } = await admin(edge.url, 'POST', `/admin/agents/${drained}/drain?deregister=true`);
    expect(status).toBe(200);
    expect(body.data[0]).toMatchObject({
      id: drained,
      drain: { draining: true, deregistering: true },
      load: { inFlight: 1 },
    });
    for (let i = 0; i < 6; i++) expect(await ask(edge.baseURL)).toEqual({ status: 200, agent: other });
    // Still in the pool while its stream runs.
    const listed = await admin(edge.url, 'GET', '/admin/agents');
    expect(listed.body.data.find((agent: { id: string }) => agent.id === drained)).toMatchObject({
      load: { inFlight: 1 },
      drain: { draining: true },
    });
    const result = readChatStream(await stream.body);
    expect(result).toEqual({ deltas: TOKENS, done: true, error: undefined });
    expect(await agents[drained]!.exited).toBe(0);
    await eventually(async () =>
      (await admin(edge.url, 'GET', '/admin/agents')).body.data.every((agent: { id: string }) => agent.id !== drained),
    );
    // The last agent drained (no deregister): nobody takes runs → 503; undrain → served again.
    expect((await admin(edge.url, 'POST', `/admin/agents/${other}/drain`)).status).toBe(200);
    expect((await ask(edge.baseURL)).status).toBe(503);
    expect((await admin(edge.url, 'POST', `/admin/agents/${other}/undrain`)).body.data[0]!.drain).toEqual({
      draining: false,
      deregistering: false,
    });
    expect(await ask(edge.baseURL)).toEqual({ status: 200, agent: other });
  });

  it('SIGTERM on the agent: the stream completes, new requests go elsewhere, the agent exits after', async () => {
    const stream = await openStream(edge.baseURL);
    const drained = stream.agent!;
    const other = drained === 'agent-a' ? 'agent-b' : 'agent-a';
    agents[drained]!.child.kill('SIGTERM');
    await agents[drained]!.waitFor((line) => line.msg === 'draining');
    await eventually(async () =>
      (await admin(edge.url, 'GET', '/admin/agents')).body.data.some(
        (agent: { id: string; drain: { draining: boolean } }) => agent.id === drained && agent.drain.draining,
      ),
    );
    for (let i = 0; i < 6; i++) expect(await ask(edge.baseURL)).toEqual({ status: 200, agent: other });
    expect(readChatStream(await stream.body)).toEqual({ deltas: TOKENS, done: true, error: undefined });
    expect(await agents[drained]!.exited).toBe(0);
    await eventually(async () => (await admin(edge.url, 'GET', '/admin/agents')).body.data.length === 1);
  });
});
