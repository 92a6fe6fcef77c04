/**
 * Backpressure, measured:
 * - A bounded queue per model group: over it, OpenAI clients get 429 and Anthropic clients 529
 *   `overloaded_error`, both with `Retry-After`; a queued request is served when a slot frees; a
 *   request whose agent died is retried ahead of the queue, even a full one.
 * - A slow client cannot grow the edge's memory: a client that stops reading a long, fast stream
 *   pauses the sim's writes (HTTP/2 flow control client socket → edge → agent → backend); the
 *   edge's RSS stays bounded; when the client reads again the stream finishes intact.
 */
import http from 'node:http';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { procStats } from '../../apps/bench/src/processes';
import {
  API_KEY,
  eventually,
  metricSum,
  startAgent,
  startEdge,
  startSim,
  stopAll,
  type EdgeHandle,
  type SimHandle,
} from './harness';

afterAll(stopAll);

function writeConfig(config: unknown): string {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'iop-edge-')), 'edge.json');
  writeFileSync(file, JSON.stringify(config));
  return file;
}

describe('admission queue', () => {
  let edge: EdgeHandle;
  let sim: SimHandle;

  beforeAll(async () => {
    sim = await startSim(['--models', 'sim-model', '--output-tokens', '4', '--ttft-ms', '1500']);
    edge = await startEdge({
      args: ['--config', writeConfig({ pool: { queue: { maxQueued: 1, maxWaitMs: 20_000 } } })],
    });
    await startAgent({
      tunnelPort: edge.tunnelPort,
      id: 'agent-1',
      backendUrl: sim.url,
      models: ['sim-model'],
      args: ['--max-concurrency', '1'],
    });
  });

  it('queues one request, refuses the next with 429 (OpenAI) and 529 overloaded_error (Anthropic), Retry-After set', async () => {
    const openai = new OpenAI({ apiKey: API_KEY, baseURL: edge.baseURL, maxRetries: 0 });
    const anthropic = new Anthropic({ apiKey: API_KEY, baseURL: edge.url, maxRetries: 0 });
    const ask = () =>
      openai.chat.completions.create({ model: 'sim-model', messages: [{ role: 'user', content: 'hi' }] });
    const running = ask();
    await eventually(
      async () => ((await (await fetch(`${sim.url}/_sim/stats`)).json()) as { inFlight: number }).inFlight === 1,
      5_000,
    );
    const queued = ask();
    await eventually(
      async () => /iop_pool_queued\{group="sim-model"\} 1/.test(await (await fetch(`${edge.url}/metrics`)).text()),
      5_000,
    );

    const refused = await ask().catch((caught: unknown) => caught);
    expect(refused).toBeInstanceOf(OpenAI.RateLimitError);
    expect((refused as InstanceType<typeof OpenAI.RateLimitError>).headers?.get('retry-after')).toBe('1');

    const overloaded = await anthropic.messages
      .create({ model: 'sim-model', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] })
      .catch((caught: unknown) => caught);
    expect(overloaded).toBeInstanceOf(Anthropic.APIError);
    expect((overloaded as InstanceType<typeof Anthropic.APIError>).status).toBe(529);
    expect((overloaded as InstanceType<typeof Anthropic.APIError>).error).toMatchObject({
      type: 'error',
      error: { type: 'overloaded_error' },
    });
    expect((overloaded as InstanceType<typeof Anthropic.APIError>).headers?.get('retry-after')).toBe('1');
    // The metrics count each refusal with the status its client got.
    const metrics = await (await fetch(`${edge.url}/metrics`)).text();
    expect(metrics).toMatch(/iop_requests_total\{dialect="openai-chat",model="sim-model",[^}]*status="429"[^}]*\} 1/);
    expect(metrics).toMatch(
      /iop_requests_total\{dialect="anthropic-messages",model="sim-model",[^}]*status="529"[^}]*\} 1/,
    );

    expect((await running).choices[0]!.finish_reason).toBe('stop');
    expect((await queued).choices[0]!.finish_reason).toBe('stop');
  });
});

describe('a request whose agent dies', () => {
  it('is retried ahead of the requests waiting in a full queue, not refused or sent to the back', async () => {
    // GPU timescale: 1.5 s to the first token; one slot per agent; one waiter fills the queue.
    const sim = await startSim(['--models', 'sim-model', '--output-tokens', '4', '--ttft-ms', '1500']);
    const edge = await startEdge({
      args: ['--config', writeConfig({ pool: { queue: { maxQueued: 1, maxWaitMs: 20_000 } } })],
    });
    const openai = new OpenAI({ apiKey: API_KEY, baseURL: edge.baseURL, maxRetries: 0 });
    const answered: string[] = [];
    const ask = (name: string) =>
      openai.chat.completions
        .create({ model: 'sim-model', messages: [{ role: 'user', content: name }] })
        .withResponse()
        .then(({ response }) => {
          answered.push(name);
          return response.headers.get('x-iop-agent-id');
        });
    const inFlight = async () =>
      ((await (await fetch(`${sim.url}/_sim/stats`)).json()) as { inFlight: number }).inFlight;
    const doomed = await startAgent({
      tunnelPort: edge.tunnelPort,
      id: 'agent-dies',
      backendUrl: sim.url,
      models: ['sim-model'],
      args: ['--max-concurrency', '1'],
    });
    const first = ask('first'); // the only agent: it runs on agent-dies
    await eventually(async () => (await inFlight()) === 1, 5_000);
    await startAgent({
      tunnelPort: edge.tunnelPort,
      id: 'agent-busy',
      backendUrl: sim.url,
      models: ['sim-model'],
      args: ['--max-concurrency', '1'],
    });
    const second = ask('second'); // agent-dies is full: agent-busy
    await eventually(async () => (await inFlight()) === 2, 5_000);
    const waiting = ask('waiting'); // both full: it waits, and the queue (1) is full
    await eventually(async () => (await metricSum(edge.url, 'iop_pool_queued', {})) === 1, 5_000);
    await doomed.kill('SIGKILL');
    // `first` is retried on agent-busy once `second` is done, before `waiting` (a 429 at once
    // if the full queue refused it; after `waiting` if it went to the back).
    expect(await Promise.all([first, second, waiting])).toEqual(['agent-busy', 'agent-busy', 'agent-busy']);
    expect(answered).toEqual(['second', 'first', 'waiting']);
  }, 30_000);
});

describe('a slow client', () => {
  let sim: SimHandle;
  let edge: EdgeHandle;
  const TOKENS = 200_000;

  beforeAll(async () => {
    sim = await startSim([
      '--models',
      'sim-model',
      '--output-tokens',
      String(TOKENS),
      '--max-model-len',
      '1000000',
      '--itl-ms',
      '0',
    ]);
    edge = await startEdge();
    await startAgent({ tunnelPort: edge.tunnelPort, id: 'agent-1', backendUrl: sim.url, models: ['sim-model'] });
  });

  const simStats = async () =>
    (await (await fetch(`${sim.url}/_sim/stats`)).json()) as {
      streamBytes: number;
      pausedWrites: number;
      completed: number;
    };

  it('pauses the backend instead of buffering, then finishes intact', async () => {
    const rssBefore = procStats(edge.proc.pid).rssBytes;
    const completedBefore = (await simStats()).completed; // the agent's startup probes count too
    const body = JSON.stringify({
      model: 'sim-model',
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'go' }],
    });
    const response = await new Promise<http.IncomingMessage>((resolve, reject) => {
      const request = http.request(
        `${edge.baseURL}/chat/completions`,
        { method: 'POST', headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' } },
        resolve,
      );
      request.on('error', reject);
      request.end(body);
    });
    expect(response.statusCode).toBe(200);
    const chunks: Buffer[] = [];
    response.once('data', (chunk: Buffer) => chunks.push(chunk));
    await new Promise((resolve) => response.once('data', resolve));
    response.pause();

    // The sim's writes stall: its byte count stops growing far below the whole answer.
    await eventually(async () => (await simStats()).pausedWrites > 0, 20_000, 100);
    let last = (await simStats()).streamBytes;
    await eventually(
      async () => {
        const now = (await simStats()).streamBytes;
        const settled = now === last;
        last = now;
        return settled;
      },
      20_000,
      500,
    );
    const stalled = await simStats();
    const rssPaused = procStats(edge.proc.pid).rssBytes;
    expect(stalled.completed).toBe(completedBefore);
    expect(stalled.streamBytes).toBeLessThan(TOKENS * 100);
    expect(rssPaused - rssBefore).toBeLessThan(50 * 1024 * 1024);

    // Reading again: the whole answer arrives, ending with usage and [DONE].
    let tail = '';
    let received = 0;
    response.on('data', (chunk: Buffer) => {
      received += chunk.length;
      tail = (tail + chunk.toString('utf8')).slice(-2000);
    });
    response.resume();
    await new Promise((resolve) => response.on('end', resolve));
    expect(tail).toContain('data: [DONE]');
    expect(tail).toContain(`"completion_tokens":${TOKENS}`);
    expect(received).toBeGreaterThan(stalled.streamBytes / 2);
    expect((await simStats()).completed).toBe(completedBefore + 1);
  });
});
