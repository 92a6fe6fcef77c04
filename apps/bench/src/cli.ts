#!/usr/bin/env node
/**
 * `iop-bench`: load generator for an iop edge (or any server speaking the same APIs). Closed loop
 * (`--concurrency N` workers) or open loop (`--rate R` requests/s, Poisson arrivals); stops after
 * `--requests` or `--duration`, whichever comes first. Prints a table (or `--json`) with TTFT,
 * inter-token latency and end-to-end latency percentiles, requests/s, tokens/s, errors by class
 * and the requests per agent (`x-iop-agent-id`). See docs/load-testing.md.
 *
 * Exit status: 0 when at least one request succeeded, 1 when none did, 2 on bad options.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Option } from 'commander';
import { iopCommand } from '@iop/core';
import { buildReport, formatReport } from './bench-report.js';
import { parseDuration, parsePositiveInteger, parsePositiveNumber, parseRange } from './cli-options.js';
import type { BenchDialect } from './dialects.js';
import { ProgressLine } from './progress.js';
import { runWorkload, type Range } from './workload.js';
import { idealCache } from './sessions/ideal-cache.js';
import { runSessions } from './sessions/session-runner.js';
import { formatTable, summarize as summarizeSessions, ttftCdfSvg, writeSamples } from './sessions/session-report.js';
import { replaySessions, syntheticSessions } from './sessions/session-workload.js';

interface CliOptions {
  url: string;
  apiKey?: string;
  model: string;
  dialect: BenchDialect;
  concurrency?: number;
  rate?: number;
  requests?: number;
  duration?: number;
  stream: boolean;
  promptWords: Range;
  maxTokens: Range;
  json?: boolean;
  sessions?: number;
  turns: number;
  projects: number;
  systemTokens: Range;
  userTokens: Range;
  thinkTime: Range;
  replay?: string;
  out?: string;
}

// Bad options exit 2, so scripts can tell them from "no request succeeded" (exit 1).
const program = iopCommand(
  'iop-bench',
  (JSON.parse(readFileSync(join(__dirname, '..', 'package.json'), 'utf8')) as { version: string }).version,
  'Load generator for an iop edge: TTFT, ITL, latency percentiles, throughput, errors and per-agent distribution.',
)
  .requiredOption('--url <url>', 'edge base URL, e.g. http://127.0.0.1:8080')
  .addOption(new Option('--api-key <key>', 'client API key (Authorization: Bearer and x-api-key)').env('IOP_API_KEY'))
  .requiredOption('--model <model>', 'model name to request')
  .addOption(new Option('--dialect <dialect>', 'client API').choices(['chat', 'responses', 'messages']).default('chat'))
  .option('--concurrency <n>', 'closed loop: concurrent workers (default 8 unless --rate)', parsePositiveInteger)
  .option('--rate <r>', 'open loop: requests per second, Poisson arrivals', parsePositiveNumber)
  .option('--requests <n>', 'requests to send (default 100, or unbounded with --duration)', parsePositiveInteger)
  .option('--duration <time>', 'stop starting requests after this time: 30s, 2m, 500ms', parseDuration)
  .addOption(new Option('--stream', 'stream responses').default(true))
  .option('--no-stream', 'non-stream requests')
  .addOption(
    new Option('--prompt-words <range>', 'prompt length in words: fixed (100) or uniform min:max')
      .argParser(parseRange)
      .default({ min: 50, max: 200 }, '50:200'),
  )
  .addOption(
    new Option('--max-tokens <range>', 'output limit per request (max_tokens): fixed or uniform min:max')
      .argParser(parseRange)
      .default({ min: 64, max: 256 }, '64:256'),
  )
  .option('--json', 'print the result as JSON on stdout (no table)')
  .option(
    '--sessions <n>',
    'multi-turn workload: N coding-agent sessions at once (docs/load-testing.md)',
    parsePositiveInteger,
  )
  .addOption(new Option('--turns <n>', 'sessions: turns per session').argParser(parsePositiveInteger).default(8))
  .addOption(
    new Option('--projects <n>', 'sessions: projects, each with its own shared system prompt and tools')
      .argParser(parsePositiveInteger)
      .default(4),
  )
  .addOption(
    new Option('--system-tokens <range>', 'sessions: words of a project system prompt')
      .argParser(parseRange)
      .default({ min: 8000, max: 20000 }, '8000:20000'),
  )
  .addOption(
    new Option('--user-tokens <range>', 'sessions: words of a user turn')
      .argParser(parseRange)
      .default({ min: 200, max: 800 }, '200:800'),
  )
  .addOption(
    new Option('--think-time <range>', 'sessions: pause between turns, ms')
      .argParser(parseRange)
      .default({ min: 2000, max: 8000 }, '2000:8000'),
  )
  .option(
    '--replay <file>',
    'multi-turn workload from a JSONL file of chat requests (messages, session_id?, timestamp?, max_tokens?)',
  )
  .option('--out <dir>', 'with --sessions or --replay: write samples.json and ttft-cdf.svg there');

function originOf(url: string): string {
  const parsed = URL.canParse(url) ? new URL(url) : undefined;
  if (parsed === undefined || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')) {
    return program.error(`--url must be an http:// or https:// URL, got ${JSON.stringify(url)}`, { exitCode: 2 });
  }
  return parsed.origin;
}

/** `--sessions` / `--replay`: the multi-turn workload against the deployment, one policy (whatever the edge runs). */
async function sessionsMain(options: CliOptions, origin: string): Promise<number> {
  const sessions =
    options.replay !== undefined
      ? replaySessions(options.replay, options.maxTokens.max)
      : syntheticSessions({
          sessions: options.sessions!,
          projects: options.projects,
          turns: options.turns,
          systemTokens: [options.systemTokens.min, options.systemTokens.max],
          userTokens: [options.userTokens.min, options.userTokens.max],
          maxTokens: [options.maxTokens.min, options.maxTokens.max],
          thinkMs: [options.thinkTime.min, options.thinkTime.max],
          rampMs: 10_000,
          seed: 1,
        });
  const total = sessions.reduce((sum, session) => sum + session.turns.length, 0);
  const progress = new ProgressLine(total);
  const { samples, wallMs } = await runSessions({
    origin,
    model: options.model,
    sessions,
    ...(options.apiKey === undefined ? {} : { apiKey: options.apiKey }),
    ...(options.duration === undefined ? {} : { durationMs: options.duration }),
    onSample: (sample) =>
      progress.record({
        ok: sample.ok,
        status: sample.status,
        latencyMs: sample.latencyMs,
        ttftMs: sample.ttftMs,
        itlMs: sample.itlMs,
        outputTokens: sample.outputTokens,
      }),
  });
  progress.stop();
  const run = { policy: 'deployment', samples, wallMs, ideal: idealCache(samples) };
  const summary = summarizeSessions(run);
  if (options.out !== undefined) {
    mkdirSync(options.out, { recursive: true });
    writeSamples(join(options.out, 'samples.json'), [run]);
    writeFileSync(join(options.out, 'ttft-cdf.svg'), await ttftCdfSvg([run], `TTFT: ${sessions.length} sessions`));
  }
  process.stdout.write(options.json === true ? `${JSON.stringify(summary, null, 2)}\n` : `${formatTable([summary])}\n`);
  return samples.some((sample) => sample.ok) ? 0 : 1;
}

async function main(): Promise<number> {
  program.parse();
  const options = program.opts<CliOptions>();
  if (options.sessions !== undefined || options.replay !== undefined) {
    if (options.rate !== undefined || options.concurrency !== undefined)
      program.error('--sessions and --replay set their own concurrency (one request per session at a time)', {
        exitCode: 2,
      });
    return sessionsMain(options, originOf(options.url));
  }
  if (options.concurrency !== undefined && options.rate !== undefined)
    program.error('--concurrency and --rate exclude each other (closed loop or open loop)', { exitCode: 2 });
  const origin = originOf(options.url);
  const requests = options.requests ?? (options.duration === undefined ? 100 : Number.POSITIVE_INFINITY);
  const mode =
    options.rate !== undefined
      ? { kind: 'open' as const, ratePerSecond: options.rate }
      : { kind: 'closed' as const, concurrency: options.concurrency ?? 8 };
  const progress = new ProgressLine(requests);
  const { results, wallMs } = await runWorkload({
    origin,
    spec: {
      dialect: options.dialect,
      model: options.model,
      stream: options.stream,
      ...(options.apiKey === undefined ? {} : { apiKey: options.apiKey }),
    },
    promptWords: options.promptWords,
    maxTokens: options.maxTokens,
    mode,
    requests,
    ...(options.duration === undefined ? {} : { durationMs: options.duration }),
    onProgress: (_done, all) => progress.record(all[all.length - 1]!),
  });
  progress.stop();
  const report = buildReport(results, wallMs);
  if (options.json === true) {
    const config = {
      url: origin,
      model: options.model,
      dialect: options.dialect,
      stream: options.stream,
      mode,
      promptWords: options.promptWords,
      maxTokens: options.maxTokens,
    };
    process.stdout.write(`${JSON.stringify({ config, ...report }, null, 2)}\n`);
  } else {
    process.stdout.write(`${formatReport(report)}\n`);
  }
  return report.requests.ok > 0 ? 0 : 1;
}

main().then(
  (code) => (process.exitCode = code),
  (error: unknown) => {
    process.stderr.write(`iop-bench: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  },
);
