/**
 * The edge-wide budget of request bytes in flight (`maxRequestBytesInFlight`, default 64 MiB):
 * a burst of 30 MB bodies keeps the edge under the memory the default is sized for (512 MiB
 * resident, read from /proc/<pid>/status while the burst runs), and the requests beyond the
 * budget get a clean refusal with `Retry-After` from the official SDKs (OpenAI: 503; Anthropic:
 * 529 `overloaded_error`), counted in `iop_request_body_refusals_total`; once the burst is over
 * no byte is still held (`iop_request_body_bytes_held` back to 0) and a large request is served.
 */
import { readFileSync } from 'node:fs';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { API_KEY, eventually, startAgent, startEdge, startSim, stopAll, type EdgeHandle } from './harness';

const MB = 1_000_000;
const STATED_RSS_BYTES = 512 * 1024 * 1024;
let edge: EdgeHandle;

beforeAll(async () => {
  const sim = await startSim(['--models', 'sim-model', '--output-tokens', '4', '--ttft-ms', '300']);
  edge = await startEdge();
  await startAgent({
    tunnelPort: edge.tunnelPort,
    id: 'budget-agent',
    backendUrl: sim.url,
    models: ['sim-model'],
    args: ['--max-concurrency', '64'],
  });
}, 60_000);

afterAll(stopAll);

function rssBytes(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((entry) => entry.startsWith('VmRSS:'))!;
  return Number(line.split(/\s+/)[1]) * 1024;
}

/** An unlabelled series' value (`name value` in the exposition format). */
async function metric(name: string): Promise<number> {
  const text = await (await fetch(`${edge.url}/metrics`)).text();
  const line = text.split('\n').find((entry) => entry.startsWith(`${name} `));
  if (line === undefined) throw new Error(`no ${name} in /metrics`);
  return Number(line.slice(name.length + 1));
}

type Result = { status: number; retryAfter: string | null; type: string | undefined };

describe('the budget of request bytes in flight', () => {
  it('20 concurrent 30 MB requests: the edge stays under 512 MiB resident, the rest get 503 / 529 with Retry-After', async () => {
    const content = 'x'.repeat(30 * MB);
    const openai = new OpenAI({ apiKey: API_KEY, baseURL: edge.baseURL, maxRetries: 0, timeout: 120_000 });
    const anthropic = new Anthropic({ apiKey: API_KEY, baseURL: edge.url, maxRetries: 0, timeout: 120_000 });
    const refusalsBefore = await metric('iop_request_body_refusals_total');
    let peak = rssBytes(edge.proc.pid);
    const sampler = setInterval(() => (peak = Math.max(peak, rssBytes(edge.proc.pid))), 25);
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i): Promise<Result> => {
        const fail = (error: unknown): Result => {
          if (!(error instanceof OpenAI.APIError) && !(error instanceof Anthropic.APIError)) throw error;
          const body = error.error as { type?: string; error?: { type?: string } } | undefined;
          return {
            status: error.status ?? 0,
            retryAfter: error.headers?.get('retry-after') ?? null,
            type: body?.error?.type ?? body?.type,
          };
        };
        const ok = (): Result => ({ status: 200, retryAfter: null, type: undefined });
        if (i % 4 === 3)
          return anthropic.messages
            .create({ model: 'sim-model', max_tokens: 4, messages: [{ role: 'user', content }] })
            .then(ok, fail);
        return openai.chat.completions
          .create({ model: 'sim-model', messages: [{ role: 'user', content }] })
          .then(ok, fail);
      }),
    );
    clearInterval(sampler);
    peak = Math.max(peak, rssBytes(edge.proc.pid));

    const served = results.filter((result) => result.status === 200);
    const refused = results.filter((result) => result.status !== 200);
    expect(served.length).toBeGreaterThanOrEqual(1);
    expect(refused.length).toBeGreaterThanOrEqual(10);
    for (const [i, result] of results.entries()) {
      if (result.status === 200) continue;
      if (i % 4 === 3) expect(result).toEqual({ status: 529, retryAfter: '2', type: 'overloaded_error' });
      else expect(result).toEqual({ status: 503, retryAfter: '2', type: 'server_error' });
    }
    expect(peak).toBeLessThan(STATED_RSS_BYTES);
    expect((await metric('iop_request_body_refusals_total')) - refusalsBefore).toBe(refused.length);
    await eventually(async () => (await metric('iop_request_body_bytes_held')) === 0, 10_000);

    // The budget is free again: a large request is served.
    const after = await openai.chat.completions.create({ model: 'sim-model', messages: [{ role: 'user', content }] });
    expect(after.choices[0]!.finish_reason).toBeDefined();
    console.log(
      `peak edge RSS ${Math.round(peak / 1024 / 1024)} MiB; served ${served.length}, refused ${refused.length}`,
    );
  }, 180_000);

  it('a chunked body is refused as its bytes cross the budget', async () => {
    // Five 30 MB bodies without Content-Length (a stream each): the budget (64 MiB) takes two.
    const chunk = Buffer.alloc(MB, 0x78);
    const statuses = await Promise.all(
      Array.from({ length: 5 }, async () => {
        const body = new ReadableStream<Uint8Array>({
          start(controller) {
            controller.enqueue(Buffer.from('{"model":"sim-model","messages":[{"role":"user","content":"'));
          },
          async pull(controller) {
            await new Promise((resolve) => setTimeout(resolve, 5));
            sent++;
            if (sent <= 30) controller.enqueue(chunk);
            else {
              controller.enqueue(Buffer.from('"}]}'));
              controller.close();
            }
          },
        });
        let sent = 0;
        const response = await fetch(`${edge.baseURL}/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' },
          body,
          duplex: 'half',
        } as RequestInit).catch(() => undefined);
        if (response === undefined) return { status: 0, retryAfter: null };
        await response.arrayBuffer();
        return { status: response.status, retryAfter: response.headers.get('retry-after') };
      }),
    );
    const refused = statuses.filter((result) => result.status !== 200);
    expect(refused.length).toBeGreaterThanOrEqual(1);
    for (const result of refused) expect(result).toEqual({ status: 503, retryAfter: '2' });
    await eventually(async () => (await metric('iop_request_body_bytes_held')) === 0, 10_000);
  }, 120_000);
});
