import { InFlightRequests } from '../../../src/telemetry/in-flight-requests.js';

describe('InFlightRequests', () => {
  it('lists open requests oldest first with age and phase, and forgets closed ones', () => {
    const requests = new InFlightRequests();
    const later = requests.open('req_b', 'anthropic-messages', undefined, 2_000);
    const first = requests.open('req_a', 'openai-chat', 'key_1', 1_000);
    Object.assign(first, { model: 'm', servedModel: 'm-served', agent: 'agent-1', attempts: 1 });
    expect(requests.list(3_500)).toEqual([
      {
        id: 'req_a',
        dialect: 'openai-chat',
        model: 'm',
        servedModel: 'm-served',
        agent: 'agent-1',
        keyId: 'key_1',
        attempts: 1,
        startedAt: 1_000,
        ageMs: 2_500,
        phase: 'running',
      },
      {
        id: 'req_b',
        dialect: 'anthropic-messages',
        model: null,
        servedModel: null,
        agent: null,
        keyId: null,
        attempts: 0,
        startedAt: 2_000,
        ageMs: 1_500,
        phase: 'queued',
      },
    ]);
    requests.close(first);
    requests.close(first); // twice is harmless
    expect(requests.list(3_500).map((entry) => entry.id)).toEqual(['req_b']);
    requests.close(later);
    expect(requests.size).toBe(0);
  });

  it('keeps two requests with one client-given id apart', () => {
    const requests = new InFlightRequests();
    const one = requests.open('same', 'openai-chat', undefined, 1);
    requests.open('same', 'openai-chat', undefined, 2);
    requests.close(one);
    expect(requests.list(3)).toMatchObject([{ id: 'same', startedAt: 2 }]);
  });
});
