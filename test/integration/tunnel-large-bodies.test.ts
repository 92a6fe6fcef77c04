/**
 * Large assignments through the tunnel under load: 8 concurrent 30 MB chat requests through one
 * agent (the body limit is 32 MiB) all succeed with one attempt each — the tunnel's HTTP/2
 * sessions hold them (memory settings sized for the body limit, the assignment written in slices
 * as flow control lets it through), none is reset and retried or waits out the accept timeout —
 * while small requests on the same edge keep answering within a bounded extra latency (through
 * another agent and sim: the one serving the large requests is busy relaying 240 MB, and a
 * single-threaded sim parsing 30 MB bodies would time itself, not the edge).
 */
import OpenAI from 'openai';
import { API_KEY, metricSum, startAgent, startEdge, startSim, stopAll, type EdgeHandle } from './harness';

const MB = 1_000_000;
let edge: EdgeHandle;
let openai: OpenAI;

beforeAll(async () => {
  const sim = await startSim(['--models', 'sim-model', '--output-tokens', '4']);
  // No budget of bytes in flight here: this is about the tunnel (the budget has its own test).
  edge = await startEdge({ args: ['--max-request-bytes-in-flight', '0'] });
  await startAgent({
    tunnelPort: edge.tunnelPort,
    id: 'large-agent',
    backendUrl: sim.url,
    models: ['sim-model'],
    args: ['--max-concurrency', '32'],
  });
  const smallSim = await startSim(['--models', 'small-model', '--output-tokens', '4']);
  await startAgent({
    tunnelPort: edge.tunnelPort,
    id: 'small-agent',
    backendUrl: smallSim.url,
    models: ['small-model'],
  });
  openai = new OpenAI({ apiKey: API_KEY, baseURL: edge.baseURL, maxRetries: 0, timeout: 120_000 });
}, 60_000);

afterAll(stopAll);

const attempts = () => metricSum(edge.url, 'iop_pool_attempts_total', {});
const retries = () => metricSum(edge.url, 'iop_pool_retries_total', {});

async function small(): Promise<void> {
  const answer = await openai.chat.completions.create({
    model: 'small-model',
    messages: [{ role: 'user', content: 'hi' }],
  });
  expect(answer.choices[0]!.finish_reason).toBe('stop');
}

describe('large assignments', () => {
  it('8 concurrent 30 MB requests through one agent all succeed with one attempt each; small requests are not stalled meanwhile', async () => {
    const baseline = [1, 2, 3, 4, 5];
    for (const _ of baseline) await small();
    const attemptsBefore = await attempts();
    const retriesBefore = await retries();
    const content = 'x'.repeat(30 * MB);
    let running = true;
    const during: number[] = [];
    const smalls = (async () => {
      while (running) during.push(await small().then(() => 1));
    })();
    const large = await Promise.all(
      Array.from({ length: 8 }, () =>
        openai.chat.completions
          .create({ model: 'sim-model', messages: [{ role: 'user', content }] })
          .then((answer) => ({
            status: 200,
            finish: answer.choices[0]!.finish_reason,
            prompt: answer.usage!.prompt_tokens,
          }))
          .catch((error: { status?: number; message?: string }) => ({
            status: error.status ?? 0,
            finish: error.message,
            prompt: 0,
          })),
      ),
    );
    running = false;
    await smalls;
    for (const result of large) expect(result).toMatchObject({ status: 200, finish: 'stop' });
    // One attempt each (the small requests took one each too), no retry.
    expect((await attempts()) - attemptsBefore).toBe(8 + during.length);
    expect((await retries()) - retriesBefore).toBe(0);
    expect(during.length).toBeGreaterThan(0);
    // Measured at the edge (its completion log's durationMs): the test's own process stalls while
    // the SDK serializes 8 × 30 MB bodies, which says nothing about the edge.
    const edgeSide = edge.proc.lines
      .filter((line) => line.msg === 'request completed' && line.model === 'small-model')
      .map((line) => Number(line.durationMs));
    const before = Math.max(...edgeSide.slice(0, baseline.length));
    const worst = Math.max(...edgeSide.slice(baseline.length));
    expect(edgeSide.length).toBe(baseline.length + during.length);
    // Generous: the machine is loaded, and 240 MB cross the edge meanwhile.
    expect(worst).toBeLessThan(before + 1_500);
    console.log(
      `small requests at the edge: baseline max ${Math.round(before)} ms; during the burst max ${Math.round(worst)} ms over ${during.length}`,
    );
  }, 180_000);
});
