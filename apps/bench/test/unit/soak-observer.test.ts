import { joinInFlight } from '../../src/soak/soak-observer.js';
import { formatSummary, soakPassed, type SoakSummary } from '../../src/soak/soak-report.js';

const backend = (inFlight: number) => ({ inFlight, aborted: 0, running: inFlight, waiting: 0 });

describe('soak in-flight agreement', () => {
  it('sums an agent id over its sessions, and counts backend requests with no edge run as orphans', () => {
    const samples = joinInFlight(
      ['agent-1', 'agent-2', 'agent-3'],
      [
        { id: 'agent-1', edgeInFlight: 3, reportedInFlight: 4, lastHeartbeatAt: 0 },
        { id: 'agent-1', edgeInFlight: 1, reportedInFlight: 4, lastHeartbeatAt: 0 },
        { id: 'agent-2', edgeInFlight: 0, reportedInFlight: 0, lastHeartbeatAt: 0 },
      ],
      [backend(4), backend(2), backend(1)],
    );
    expect(samples).toEqual([
      { id: 'agent-1', edge: 4, reported: 4, backend: 4, disagreement: 0, orphans: 0 },
      { id: 'agent-2', edge: 0, reported: 0, backend: 2, disagreement: 2, orphans: 2 },
      { id: 'agent-3', edge: 0, reported: 0, backend: 1, disagreement: 1, orphans: 1 }, // not listed by the edge (e.g. killed)
    ]);
  });

  it('passes only with no orphan and full agreement at rest, and says so in the table', () => {
    const summary: SoakSummary = {
      outcomes: [
        { dialect: 'chat', stream: true, behaviour: 'normal', ok: true, startedAt: 0, endedAt: 10 },
        {
          dialect: 'chat',
          stream: true,
          behaviour: 'normal',
          ok: false,
          errorClass: 'http 503 no_capacity',
          startedAt: 100,
          endedAt: 110,
        },
        {
          dialect: 'messages',
          stream: false,
          behaviour: 'abort',
          ok: false,
          errorClass: 'connection',
          startedAt: 500,
          endedAt: 600,
        },
      ],
      windows: [{ name: 'edge restart', startAt: 550, endAt: 700 }],
      maxDisagreementUnderLoad: 5,
      atRest: [{ id: 'agent-1', edge: 0, reported: 0, backend: 0, disagreement: 0, orphans: 0 }],
      settleMs: 1200,
      maxHeartbeatAgeMs: 5100,
      heartbeatAgeAtEndMs: 900,
      resourcesStart: [{ name: 'edge', pid: 1, rssMiB: 80, fds: 28 }],
      resourcesEnd: [{ name: 'edge', pid: 2, rssMiB: 90.25, fds: 30 }],
      backendAborted: 3,
      elapsedMs: 300_000,
    };
    expect(soakPassed(summary)).toBe(true);
    const text = formatSummary(summary);
    expect(text).toMatch(/chat stream normal\s+2\s+1\s+1\s+0\s+http 503 no_capacity ×1/);
    expect(text).toMatch(/messages non-stream abort\s+1\s+0\s+1\s+1\s+connection ×1/);
    expect(text).toMatch(/all\s+3\s+1\s+2\s+1/);
    expect(text).toMatch(/orphaned backend requests at rest.*\s0\s+ok/);
    expect(text).toMatch(/edge\s+80\.0\s+90\.3\s+28\s+30\s+restarted/);
    expect(
      soakPassed({
        ...summary,
        atRest: [{ id: 'agent-1', edge: 0, reported: 0, backend: 1, disagreement: 1, orphans: 1 }],
      }),
    ).toBe(false);
  });
});
