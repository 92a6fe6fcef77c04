import { create } from '@bufbuild/protobuf';
import { ModelInfoSchema, RegisterSchema } from '@iop/proto';
import { P2cPicker } from '../../../src/pool/p2c.js';
import { agentProvider, hasLabels } from '../../../src/pool/provider.js';
import { AgentSession } from '../../../src/tunnel/agent-session.js';

function session(agentId: string, labels: Record<string, string> = {}) {
  const register = create(RegisterSchema, { agentId, maxConcurrency: 4, labels, models: [create(ModelInfoSchema, { id: 'm' })] });
  return new AgentSession(register, `ses_${agentId}`);
}

describe('agentProvider', () => {
  it('reads and writes through to the session, and is the same object each time', () => {
    const agent = session('gpu-1', { weight: '2', zone: 'a' });
    const provider = agentProvider(agent);
    expect(agentProvider(agent)).toBe(provider);
    expect([provider.id, provider.maxConcurrency, provider.weight]).toEqual(['gpu-1', 4, 2]);
    provider.inFlight++;
    expect(agent.inFlight).toBe(1);
    agent.load = { reportedInFlight: 1, sessionInFlight: 1, backendInFlight: 1, queued: 3, kvCacheUsage: 0.5, backendWaiting: 0 };
    expect(provider.load.queued).toBe(3);
    agent.draining = true;
    expect(provider.available).toBe(false);
    expect(hasLabels(provider, { zone: 'a' })).toBe(true);
    expect(hasLabels(provider, { zone: 'b' })).toBe(false);
  });

  it('defaults the weight to 1 and routes sessions with the P2C picker', () => {
    const busy = session('busy');
    const idle = session('idle');
    busy.inFlight = 3;
    expect(agentProvider(idle).weight).toBe(1);
    expect(new P2cPicker().pick([busy, idle].map(agentProvider))?.id).toBe('idle');
  });
});
