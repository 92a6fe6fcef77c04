/**
 * The run-accepted timeout: an agent that does not acknowledge an assigned run within
 * `runAcceptedTimeoutMs` (here it is frozen with SIGSTOP, its Control stream still open) fails
 * the attempt at once — a 504 after one attempt, not a retry on the same agent — and the run is
 * cancelled at the agent, so when it wakes up the assignment never becomes an orphaned backend
 * request: the edge's, the agent's and the sim's in-flight counts return to 0.
 */
import OpenAI from 'openai';
import {
  API_KEY,
  eventually,
  simRequests,
  startAgent,
  startEdge,
  startSim,
  stopAll,
  type EdgeHandle,
  type Proc,
  type SimHandle,
} from './harness';
import { ADMIN_KEY, admin } from './lifecycle-helpers';

jest.setTimeout(60_000);

let sim: SimHandle;
let edge: EdgeHandle;
let agent: Proc;

beforeAll(async () => {
  sim = await startSim(['--models', 'sim-model', '--output-tokens', '8', '--ttft-ms', '1500']);
  // Heartbeats every 3 s: a 1–2 s freeze is not a lost agent (dropped only after 9 s of silence).
  edge = await startEdge({
    args: [
      '--admin-keys',
      ADMIN_KEY,
      '--heartbeat-interval-ms',
      '3000',
      '--run-accepted-timeout-ms',
      '1000',
      '--first-byte-timeout-ms',
      '5000',
    ],
  });
  agent = await startAgent({ tunnelPort: edge.tunnelPort, id: 'frozen', backendUrl: sim.url, models: ['sim-model'] });
});

afterAll(async () => {
  process.kill(agent.pid, 'SIGCONT');
  await stopAll();
});

it('a frozen agent: 504 after one attempt within the accepted timeout, the run cancelled at the agent, counts back to 0', async () => {
  const client = new OpenAI({ apiKey: API_KEY, baseURL: edge.baseURL, maxRetries: 0 });
  process.kill(agent.pid, 'SIGSTOP');
  const startedAt = Date.now();
  let error: unknown;
  try {
    error = await client.chat.completions
      .create({ model: 'sim-model', messages: [{ role: 'user', content: 'hi' }], stream: true })
      .then(
        () => undefined,
        (caught: unknown) => caught,
      );
  } finally {
    process.kill(agent.pid, 'SIGCONT');
  }
  const elapsedMs = Date.now() - startedAt;
  expect(error).toBeInstanceOf(OpenAI.APIError);
  expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(504);
  expect((error as Error).message).toContain('did not accept the run within 1000 ms');
  expect(elapsedMs).toBeGreaterThanOrEqual(900);
  expect(elapsedMs).toBeLessThan(4_000); // one accepted timeout, no second attempt on the same agent
  // Log lines leave at the end of the edge's event-loop turn: the answer may arrive first.
  const notRetried = (line: Record<string, unknown>) =>
    line.msg === 'attempt failed; not retried' &&
    String(line.reason).includes('run_accepted_timeout is not retried on the same provider');
  await edge.proc.waitFor(notRetried, 5_000);
  expect(edge.proc.lines.filter(notRetried)).toHaveLength(1);
  // Awake again, the agent gets the assignment and its CancelRun: nothing is left generating.
  await eventually(
    async () => {
      const { body } = await admin(edge.url, 'GET', '/admin/agents');
      const view = body.data.find((entry) => entry.id === 'frozen');
      const open = (await simRequests(sim)).filter(
        (record) => record.path === '/v1/chat/completions' && record.completed !== true && record.aborted !== true,
      ).length;
      return (
        view !== undefined &&
        view.load.inFlight === 0 &&
        view.load.agentInFlight === 0 &&
        view.load.backendInFlight === 0 &&
        open === 0
      );
    },
    10_000,
    100,
  );
  expect(
    (await simRequests(sim)).filter((record) => record.path === '/v1/chat/completions' && record.completed === true),
  ).toHaveLength(0);
  expect(edge.proc.lines.some((line) => line.msg === 'agent left')).toBe(false);
});
