/**
 * A flapping provider: sim B answers 500 for a while (a fault queue), its agent is ejected after
 * consecutive failures (logged, visible in `/metrics`), clients never see the failures (retried on
 * agent A), and once the faults run out the half-open probe succeeds and B serves again.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
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
  type SimHandle,
} from './harness';

let simA: SimHandle;
let simB: SimHandle;
let edge: EdgeHandle;
let client: OpenAI;

beforeAll(async () => {
  simA = await startSim(['--models', 'sim-model', '--output-tokens', '4']);
  simB = await startSim(['--models', 'sim-model', '--output-tokens', '4']);
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'iop-edge-')), 'edge.json');
  writeFileSync(
    file,
    JSON.stringify({
      pool: {
        outlier: { consecutiveFailures: 2, baseEjectionMs: 4000, maxEjectionMs: 10_000, maxEjectedPercent: 50 },
        retry: { baseBackoffMs: 5 },
      },
    }),
  );
  edge = await startEdge({ args: ['--config', file] });
  await startAgent({ tunnelPort: edge.tunnelPort, id: 'agent-a', backendUrl: simA.url, models: ['sim-model'] });
  await startAgent({ tunnelPort: edge.tunnelPort, id: 'agent-b', backendUrl: simB.url, models: ['sim-model'] });
  client = new OpenAI({ apiKey: API_KEY, baseURL: edge.baseURL, maxRetries: 0 });
});

afterAll(stopAll);

async function metric(name: string, labels: string): Promise<number> {
  const text = await (await fetch(`${edge.url}/metrics`)).text();
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${name}{`) && candidate.includes(labels));
  return line === undefined ? 0 : Number(line.split(' ').pop());
}

// Each request its own conversation: prefix affinity keeps a conversation on the provider that
// served it last, so one conversation moved to A while B was ejected would stay there.
let asked = 0;
const ask = async () => {
  const content = `hello ${asked++}`;
  const { data, response } = await client.chat.completions
    .create({ model: 'sim-model', messages: [{ role: 'user', content }] })
    .withResponse();
  expect(data.choices[0]!.finish_reason).toBe('stop');
  return response.headers.get('x-iop-agent-id');
};

it('ejects a failing provider while it is down and takes it back when healthy', async () => {
  await fetch(`${simB.url}/_sim/faults`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ fault: '500', count: 1000 }),
  });
  // Every request succeeds; the failures on B are retried on A until B is ejected.
  await eventually(
    async () => {
      await ask();
      return (await metric('iop_pool_provider_ejected', 'provider="agent-b"')) === 1;
    },
    20_000,
    0,
  );
  expect(await metric('iop_pool_ejections_total', 'provider="agent-b"')).toBeGreaterThanOrEqual(1);
  await edge.proc.waitFor((line) => line.msg === 'provider ejected' && line.providerId === 'agent-b', 5_000);

  // While ejected, B gets no traffic.
  const bBefore = (await simRequests(simB)).length;
  for (let i = 0; i < 10; i++) expect(await ask()).toBe('agent-a');
  expect((await simRequests(simB)).length).toBe(bBefore);

  // Healed: after the ejection time a probe goes to B, succeeds, and B serves again.
  await fetch(`${simB.url}/_sim/faults`, { method: 'DELETE' });
  await eventually(async () => (await ask()) === 'agent-b', 30_000, 100);
  expect(await metric('iop_pool_provider_ejected', 'provider="agent-b"')).toBe(0);
  await edge.proc.waitFor((line) => line.msg === 'provider recovered' && line.providerId === 'agent-b', 5_000);
});
