/**
 * Drives load: closed loop (a fixed number of concurrent workers, each sending its next request
 * when the previous one ends) or open loop (requests start at a fixed mean rate, Poisson
 * arrivals, whatever the answers do). Stops after `requests` requests or `durationMs`, whichever
 * comes first. Prompt and output lengths are drawn per request from uniform ranges.
 */
import { Agent } from 'undici';
import { sendRequest, type RequestResult, type RequestSpec } from './request.js';
import { sleep } from '@iop/core';

export interface Range {
  min: number;
  max: number;
}

export interface WorkloadOptions {
  origin: string;
  spec: Omit<RequestSpec, 'prompt' | 'maxTokens'>;
  /** Words in the prompt. */
  promptWords: Range;
  /** `max_tokens` per request. */
  maxTokens: Range;
  mode: { kind: 'closed'; concurrency: number } | { kind: 'open'; ratePerSecond: number };
  requests: number;
  durationMs?: number;
  onProgress?: (done: number, results: readonly RequestResult[]) => void;
}

const WORDS =
  'the a little cat dog sun ran jumped over happy tree house bird sky play friend said big small red blue'.split(' ');

function draw(range: Range): number {
  return range.min + Math.floor(Math.random() * (range.max - range.min + 1));
}

function prompt(words: number): string {
  let text = '';
  for (let i = 0; i < words; i++) text += (i === 0 ? '' : ' ') + WORDS[i % WORDS.length];
  return text;
}

export interface WorkloadResult {
  results: RequestResult[];
  wallMs: number;
}

export async function runWorkload(options: WorkloadOptions): Promise<WorkloadResult> {
  const dispatcher = new Agent({ connections: 512, pipelining: 1, keepAliveTimeout: 30_000 });
  const results: RequestResult[] = [];
  const deadline = options.durationMs === undefined ? Number.POSITIVE_INFINITY : performance.now() + options.durationMs;
  let started = 0;
  const next = () => {
    if (started >= options.requests || performance.now() > deadline) return undefined;
    started++;
    return sendRequest(dispatcher, options.origin, {
      ...options.spec,
      prompt: prompt(draw(options.promptWords)),
      maxTokens: draw(options.maxTokens),
    }).then((result) => {
      results.push(result);
      options.onProgress?.(results.length, results);
    });
  };
  const begin = performance.now();
  if (options.mode.kind === 'closed') {
    const worker = async () => {
      for (let pending = next(); pending !== undefined; pending = next()) await pending;
    };
    await Promise.all(Array.from({ length: options.mode.concurrency }, worker));
  } else {
    const inFlight: Array<Promise<void>> = [];
    const meanGapMs = 1000 / options.mode.ratePerSecond;
    for (;;) {
      const pending = next();
      if (pending === undefined) break;
      inFlight.push(pending);
      await sleep(-Math.log(1 - Math.random()) * meanGapMs);
    }
    await Promise.all(inFlight);
  }
  const wallMs = performance.now() - begin;
  await dispatcher.close();
  return { results, wallMs };
}
