#!/usr/bin/env node
/**
 * `npm run bench:gate`: what the stream gate buys and what it costs, on loopback (sim → agent →
 * edge with the default gate filters: tool-calls, structured-output, degeneration, empty-output;
 * evidence-tail; at most 5 attempts).
 *
 * 1. Validity: the sim makes 30 % of its tool calls invalid (`--invalid-tool-args 0.3`); streaming
 *    chat requests with `tool_choice: "required"`, straight to the sim and through the gate with
 *    `x-iop-gate: attempts=3` and `attempts=5` (independent draws: 1 − 0.3ⁿ can be valid). Share
 *    of requests that end with schema-valid tool calls (ajv, the request's schema), backend
 *    requests per client request (sim `/_sim/stats`) and gate attempts per request
 *    (`iop_gate_attempts_total`).
 * 2. Latency: a paced sim (20 ms TTFT, 5 ms ITL, 20 tokens), streaming chat, closed loop at
 *    concurrency 1 and 16: direct, the byte relay (no tools), and the gate on requests that carry
 *    tools (so the normalized path is taken) under `x-iop-gate: policy=passthrough`,
 *    `policy=evidence-tail` and `policy=buffered`. Modes alternate in rounds so drift hits all alike.
 *    TTFT p50/p99, tokens/s, edge CPU ms per request, and the gate's peak held bytes per attempt
 *    (`iop_gate_held_bytes`, bucket bounds).
 * `BENCH_SCALE=0.2` runs a fifth of the requests.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { request } from 'undici';
import Ajv from 'ajv';
import { launch, launchAgent, procStats, type Proc } from './processes.js';
import { bucketPercentile, histogramDelta, scrapeMetrics, sumOf, type HistogramDelta } from './prometheus.js';
import type { RequestResult, RequestSpec } from './request.js';
import { summarize } from './stats.js';
import { runWorkload } from './workload.js';
import { WEATHER_PARAMETERS as parameters } from './weather-tool.js';

const API_KEY = 'sk-iop-bench-key-0001';
const JOIN_TOKEN = 'iop-bench-join-token';
const MODEL = 'bench-model';
const OUTPUT_TOKENS = 20;
const scale = Number(process.env.BENCH_SCALE ?? '1');
const scaled = (count: number, min: number) => Math.max(min, Math.round(count * scale));

/** The edge default, with room for 5 attempts (a request header can only lower it). */
const GATE = {
  default: {
    filters: ['tool-calls', 'structured-output', 'degeneration', 'empty-output'],
    policy: 'evidence-tail',
    maxAttempts: 5,
  },
};

const tools = [{ type: 'function', function: { name: 'get_weather', description: 'Forecast for a city', parameters } }];

interface Stack {
  sim: Proc;
  simUrl: string;
  edge: Proc;
  edgeUrl: string;
  agent: Proc;
}

async function startStack(simArgs: string[]): Promise<Stack> {
  const sim = launch('sim', 'apps/sim/dist/main.js', [
    '--port',
    '0',
    '--host',
    '127.0.0.1',
    '--models',
    MODEL,
    ...simArgs,
  ]);
  const simPort = (await sim.ready()).port as number;
  const config = path.join(mkdtempSync(path.join(os.tmpdir(), 'iop-gate-bench-')), 'edge.json');
  writeFileSync(config, JSON.stringify({ gate: GATE }));
  // Log level warn: no line per request (it would cost the edge CPU).
  const edge = launch(
    'edge',
    'apps/edge/dist/main.js',
    ['--port', '0', '--tunnel-port', '0', '--api-keys', API_KEY, '--join-tokens', JOIN_TOKEN, '--config', config],
    { IOP_LOG_LEVEL: 'warn' },
  );
  const ready = await edge.ready();
  const [port, tunnelPort] = [ready.port as number, ready.tunnelPort as number];
  const agent = launchAgent('agent', {
    tunnelPort,
    joinToken: JOIN_TOKEN,
    agentId: 'bench-agent',
    backendUrl: `http://127.0.0.1:${simPort}`,
    models: MODEL,
    maxConcurrency: 256,
  });
  await agent.ready(30_000);
  return { sim, simUrl: `http://127.0.0.1:${simPort}`, edge, edgeUrl: `http://127.0.0.1:${port}`, agent };
}

async function stopStack(stack: Stack): Promise<void> {
  await Promise.all([stack.agent.kill('SIGTERM'), stack.edge.kill('SIGTERM')]);
  await stack.sim.kill('SIGTERM');
}

async function simRequestCount(stack: Stack): Promise<number> {
  const response = await request(`${stack.simUrl}/_sim/stats`);
  return ((await response.body.json()) as { requests: number }).requests;
}

const fixed = (value: number | undefined, digits = 2) =>
  value === undefined || Number.isNaN(value) ? '-' : value.toFixed(digits);

function printTable(header: string[], rows: string[][]): void {
  console.log(`| ${header.join(' | ')} |`);
  console.log(`|${header.map(() => '---').join('|')}|`);
  for (const row of rows) console.log(`| ${row.join(' | ')} |`);
}

function errorClasses(results: readonly RequestResult[]): string {
  const counts = new Map<string, number>();
  for (const result of results) {
    if (result.ok) continue;
    const name = `${result.errorClass ?? 'error'} ${result.status}`;
    counts.set(name, (counts.get(name) ?? 0) + 1);
  }
  return [...counts].map(([name, count]) => `${count} ${name}`).join(', ');
}

// ---- 1. validity ------------------------------------------------------------------------------

interface ValidityRow {
  /** Gate attempt budget; 0 = straight to the sim. */
  attempts: number;
  requests: number;
  valid: number;
  errors: number;
  /** Error count by class (`http_5xx`, `stream_error`, …). */
  errorClasses: string;
  backendPerRequest: number;
  gateAttemptsPerRequest: number | undefined;
  latencyP50: number;
  heldBytes: HistogramDelta | undefined;
}

async function validity(): Promise<ValidityRow[]> {
  const stack = await startStack(['--invalid-tool-args', '0.3', '--ttft-ms', '0', '--itl-ms', '0']);
  const isValid = new Ajv().compile(parameters);
  const validCalls = (result: RequestResult) =>
    result.ok &&
    result.toolCalls !== undefined &&
    result.toolCalls.length > 0 &&
    result.toolCalls.every((call) => {
      if (call.name !== 'get_weather') return false;
      try {
        return isValid(JSON.parse(call.arguments));
      } catch {
        return false;
      }
    });
  const spec: Omit<RequestSpec, 'prompt' | 'maxTokens'> = {
    dialect: 'chat',
    model: MODEL,
    stream: true,
    apiKey: API_KEY,
    body: { tools, tool_choice: 'required' },
  };
  const requests = scaled(300, 40);
  const rows: ValidityRow[] = [];
  try {
    for (const attempts of [0, 3, 5]) {
      const origin = attempts === 0 ? stack.simUrl : stack.edgeUrl;
      const simBefore = await simRequestCount(stack);
      const metricsBefore = await scrapeMetrics(stack.edgeUrl);
      const { results } = await runWorkload({
        origin,
        spec: attempts === 0 ? spec : { ...spec, headers: { 'x-iop-gate': `attempts=${attempts}` } },
        promptWords: { min: 8, max: 32 },
        maxTokens: { min: 256, max: 256 },
        mode: { kind: 'closed', concurrency: 8 },
        requests,
      });
      const metricsAfter = await scrapeMetrics(stack.edgeUrl);
      const gateAttempts =
        sumOf(metricsAfter, 'iop_gate_attempts_total') - sumOf(metricsBefore, 'iop_gate_attempts_total');
      rows.push({
        attempts,
        requests: results.length,
        valid: results.filter(validCalls).length,
        errors: results.filter((result) => !result.ok).length,
        errorClasses: errorClasses(results),
        backendPerRequest: ((await simRequestCount(stack)) - simBefore) / results.length,
        gateAttemptsPerRequest: attempts === 0 ? undefined : gateAttempts / results.length,
        latencyP50: summarize(results.map((result) => result.latencyMs)).p50,
        heldBytes: attempts === 0 ? undefined : histogramDelta(metricsBefore, metricsAfter, 'iop_gate_held_bytes'),
      });
      process.stderr.write(`  validity attempts=${attempts}: ${rows.at(-1)!.valid}/${results.length} valid\n`);
    }
  } finally {
    await stopStack(stack);
  }
  return rows;
}

// ---- 2. latency -------------------------------------------------------------------------------

type Mode = 'direct' | 'relay' | 'gate passthrough' | 'gate evidence-tail' | 'gate buffered';
const MODES: Mode[] = ['direct', 'relay', 'gate passthrough', 'gate evidence-tail', 'gate buffered'];

function modeSpec(mode: Mode): Omit<RequestSpec, 'prompt' | 'maxTokens'> {
  const base = { dialect: 'chat' as const, model: MODEL, stream: true, apiKey: API_KEY };
  if (mode === 'direct' || mode === 'relay') return base;
  // `tool_choice: auto` with tools: the sim answers with text, the gate validates the (absent) calls.
  return {
    ...base,
    body: { tools, tool_choice: 'auto' },
    headers: { 'x-iop-gate': `policy=${mode.slice('gate '.length)}` },
  };
}

interface LatencyRow {
  mode: Mode;
  concurrency: number;
  results: RequestResult[];
  wallMs: number;
  edgeCpuMs: number;
  held: HistogramDelta;
}

async function latency(): Promise<LatencyRow[]> {
  const stack = await startStack(['--ttft-ms', '20', '--itl-ms', '5', '--output-tokens', String(OUTPUT_TOKENS)]);
  const rows: LatencyRow[] = [];
  try {
    for (const [concurrency, perRound, rounds] of [
      [1, scaled(25, 4), 3],
      [16, scaled(160, 32), 3],
    ] as const) {
      const byMode = new Map<Mode, LatencyRow>();
      for (const mode of MODES) {
        byMode.set(mode, {
          mode,
          concurrency,
          results: [],
          wallMs: 0,
          edgeCpuMs: 0,
          held: { count: 0, sum: 0, buckets: [] },
        });
        const origin = mode === 'direct' ? stack.simUrl : stack.edgeUrl;
        await runWorkload({
          origin,
          spec: modeSpec(mode),
          promptWords: { min: 8, max: 32 },
          maxTokens: { min: OUTPUT_TOKENS, max: OUTPUT_TOKENS },
          mode: { kind: 'closed', concurrency },
          requests: Math.min(100, concurrency * 4),
        });
      }
      for (let round = 0; round < rounds; round++) {
        for (const mode of MODES) {
          const row = byMode.get(mode)!;
          const origin = mode === 'direct' ? stack.simUrl : stack.edgeUrl;
          const metricsBefore = await scrapeMetrics(stack.edgeUrl);
          const cpuBefore = procStats(stack.edge.pid).cpuMs;
          const { results, wallMs } = await runWorkload({
            origin,
            spec: modeSpec(mode),
            promptWords: { min: 8, max: 32 },
            maxTokens: { min: OUTPUT_TOKENS, max: OUTPUT_TOKENS },
            mode: { kind: 'closed', concurrency },
            requests: perRound,
          });
          row.edgeCpuMs += procStats(stack.edge.pid).cpuMs - cpuBefore;
          row.results.push(...results);
          row.wallMs += wallMs;
          row.held = addHistograms(
            row.held,
            histogramDelta(metricsBefore, await scrapeMetrics(stack.edgeUrl), 'iop_gate_held_bytes'),
          );
        }
      }
      for (const mode of MODES) {
        const row = byMode.get(mode)!;
        rows.push(row);
        process.stderr.write(
          `  latency c=${concurrency} ${mode}: TTFT p50 ${fixed(ttftOf(row).p50)} ms, errors ${row.results.filter((result) => !result.ok).length}\n`,
        );
      }
    }
  } finally {
    await stopStack(stack);
  }
  return rows;
}

function addHistograms(a: HistogramDelta, b: HistogramDelta): HistogramDelta {
  if (a.buckets.length === 0) return b;
  return {
    count: a.count + b.count,
    sum: a.sum + b.sum,
    buckets: a.buckets.map((bucket, index) => ({
      le: bucket.le,
      count: bucket.count + (b.buckets[index]?.count ?? 0),
    })),
  };
}

const ttftOf = (row: LatencyRow) =>
  summarize(
    row.results.filter((result) => result.ok).flatMap((result) => (result.ttftMs === undefined ? [] : [result.ttftMs])),
  );
const heldText = (held: HistogramDelta | undefined) =>
  held === undefined || held.count === 0
    ? '-'
    : `${fixed(held.sum / held.count, 0)} / ≤${bucketPercentile(held, 50)} / ≤${bucketPercentile(held, 99)}`;

async function main(): Promise<void> {
  console.log(
    `iop stream gate benchmark — ${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}, scale ${scale}`,
  );
  console.log('load generator, sim, edge and agent share this machine.\n');

  const validityRows = await validity();
  console.log(
    '\n1. Tool calls with 30 % invalid arguments at the backend (streaming chat, tool_choice required, concurrency 8):\n',
  );
  printTable(
    [
      'target',
      'requests',
      'schema-valid tool calls',
      'errors',
      'backend requests / request',
      'gate attempts / request',
      'p50 latency ms',
      'held bytes per attempt: mean / p50 / p99',
    ],
    validityRows.map((row) => [
      row.attempts === 0 ? 'direct to sim' : `through the gate, ${row.attempts} attempts`,
      String(row.requests),
      `${row.valid} (${fixed((row.valid / row.requests) * 100, 1)} %)`,
      row.errors === 0 ? '0' : `${row.errors} (${row.errorClasses})`,
      fixed(row.backendPerRequest, 3),
      fixed(row.gateAttemptsPerRequest, 3),
      fixed(row.latencyP50),
      heldText(row.heldBytes),
    ]),
  );

  const latencyRows = await latency();
  console.log(
    `\n2. Streaming chat, paced sim (20 ms TTFT, 5 ms ITL, ${OUTPUT_TOKENS} tokens); gate modes carry tools and x-iop-gate:\n`,
  );
  printTable(
    [
      'conc',
      'mode',
      'requests',
      'errors',
      'TTFT p50 ms',
      'TTFT p99 ms',
      'Δ TTFT p50 vs relay ms',
      'Δ TTFT p50 vs gate passthrough ms',
      'tok/s',
      'edge CPU ms/req',
      'held bytes per attempt: mean / p50 / p99',
    ],
    latencyRows.map((row) => {
      const p50Of = (mode: Mode) =>
        ttftOf(latencyRows.find((other) => other.concurrency === row.concurrency && other.mode === mode)!).p50;
      const ttft = ttftOf(row);
      const tokens = row.results.reduce((sum, result) => sum + result.outputTokens, 0);
      return [
        String(row.concurrency),
        row.mode,
        String(row.results.length),
        String(row.results.filter((result) => !result.ok).length),
        fixed(ttft.p50),
        fixed(ttft.p99),
        row.mode === 'direct' ? '-' : fixed(ttft.p50 - p50Of('relay')),
        row.mode.startsWith('gate') ? fixed(ttft.p50 - p50Of('gate passthrough')) : '-',
        fixed((tokens / row.wallMs) * 1000, 0),
        row.mode === 'direct' ? '-' : fixed(row.edgeCpuMs / row.results.length, 3),
        heldText(row.held),
      ];
    }),
  );
  console.log(
    '\nHeld bytes: the most the gate held at once in an attempt (queued events at 64 bytes + UTF-8 payload, plus filter state); p50/p99 are histogram bucket bounds.',
  );
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
