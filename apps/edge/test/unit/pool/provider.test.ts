import { create } from '@bufbuild/protobuf';
import { ModelInfoSchema, RegisterSchema } from '@iop/proto';
import { P2cPicker } from '../../../src/pool/p2c.js';
import { hasLabels, type PoolProvider } from '../../../src/pool/provider.js';
import { AgentSession } from '../../../src/tunnel/agent-session.js';
import { RunRegistry } from '../../../src/tunnel/run-registry.js';

function session(agentId: string, labels: Record<string, string> = {}) {
  const register = create(RegisterSchema, {
    agentId,
    maxConcurrency: 4,
    labels,
    models: [create(ModelInfoSchema, { id: 'm' })],
  });
  return new AgentSession(register, `ses_${agentId}`, new RunRegistry());
}

describe('AgentSession as a pool provider', () => {
  it('is the provider itself: id, weight, load, availability and labels of the session', () => {
    const agent = session('gpu-1', { weight: '2', zone: 'a' });
    const provider: PoolProvider = agent;
    expect([provider.kind, provider.id, provider.maxConcurrency, provider.weight]).toEqual(['agent', 'gpu-1', 4, 2]);
    provider.inFlight++;
    expect(agent.inFlight).toBe(1);
    agent.load = {
      reportedInFlight: 1,
      sessionInFlight: 1,
      backendInFlight: 1,
      queued: 3,
      kvCacheUsage: 0.5,
      backendWaiting: 0,
    };
    expect(provider.load.queued).toBe(3);
    expect(provider.accepting).toBe(true);
    agent.draining = true;
    expect(provider.available).toBe(false);
    expect(provider.accepting).toBe(false);
    expect(hasLabels(provider, { zone: 'a' })).toBe(true);
    expect(hasLabels(provider, { zone: 'b' })).toBe(false);
  });

  it('defaults the weight to 1 and routes sessions with the P2C picker', () => {
    const busy = session('busy');
    const idle = session('idle');
    busy.inFlight = 3;
    expect(idle.weight).toBe(1);
    expect(session('odd', { weight: '-1' }).weight).toBe(1);
    expect(new P2cPicker().pick([busy, idle])?.id).toBe('idle');
  });
});
