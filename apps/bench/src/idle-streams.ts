/**
 * What an idle stream costs the edge: `streams` streamed Chat Completions held open at once
 * against a backend that has not produced a first token yet (a sim whose TTFT is longer than the
 * measurement), the way thousands of clients wait on a saturated GPU pool. Reads the edge's and
 * the agent's resident memory before and once every stream is in flight (the edge's
 * `iop_requests_in_flight`), reports the growth per stream, then aborts them all.
 */
import { setMaxListeners } from 'node:events';
import { Agent, request } from 'undici';
import { sleep } from '@iop/core';
import { procStats } from './processes.js';

export interface IdleStreamsOptions {
  edgeUrl: string;
  edgePid: number;
  /** One of the agents, and how many share the runs (P2C spreads them evenly): its growth per run of its share. */
  agentPid?: number;
  agents?: number;
  apiKey: string;
  model: string;
  streams: number;
  /** Longest wait for every stream to be in flight, ms. */
  timeoutMs?: number;
}

export interface IdleStreamsResult {
  streams: number;
  inFlight: number;
  edgeRssBeforeMiB: number;
  edgeRssAfterMiB: number;
  /** Edge RSS growth per open stream, KiB. */
  edgeKiBPerStream: number;
  /** The sampled agent's RSS growth per run it holds (its even share of the streams), KiB. */
  agentKiBPerRun?: number;
  /** Time to open them all, ms. */
  openMs: number;
}

/** Sum of `iop_requests_in_flight` over its series, from the edge's /metrics. */
async function edgeInFlight(edgeUrl: string): Promise<number> {
  const response = await request(`${edgeUrl}/metrics`);
  const text = await response.body.text();
  let sum = 0;
  for (const line of text.split('\n'))
    if (line.startsWith('iop_requests_in_flight')) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  return sum;
}

/** Streams opened at once before waiting for them to be in flight. */
const BATCH = 400;

/** Waits until the edge has `count` requests in flight or `timeoutMs` passed; returns the last count. */
async function untilInFlight(edgeUrl: string, count: number, timeoutMs: number): Promise<number> {
  const deadline = performance.now() + timeoutMs;
  let inFlight = await edgeInFlight(edgeUrl);
  while (inFlight < count && performance.now() < deadline) {
    // Not faster: each scrape of /metrics walks the edge's open handles and descriptors (thousands here).
    await sleep(1_000);
    inFlight = await edgeInFlight(edgeUrl);
  }
  return inFlight;
}

/** Peak RSS over a few samples (RSS settles after allocation bursts), bytes. */
async function settledRss(pid: number): Promise<number> {
  let peak = 0;
  for (let i = 0; i < 5; i++) {
    peak = Math.max(peak, procStats(pid).rssBytes);
    await sleep(200);
  }
  return peak;
}

export async function measureIdleStreams(options: IdleStreamsOptions): Promise<IdleStreamsResult> {
  const edgeBefore = await settledRss(options.edgePid);
  const agentBefore = options.agentPid === undefined ? undefined : await settledRss(options.agentPid);
  const dispatcher = new Agent({
    connections: options.streams + 8,
    pipelining: 1,
    keepAliveTimeout: 60_000,
    headersTimeout: 0,
    bodyTimeout: 0,
  });
  const abort = new AbortController();
  setMaxListeners(Number.POSITIVE_INFINITY, abort.signal); // one listener per open request
  const body = JSON.stringify({
    model: options.model,
    stream: true,
    max_tokens: 20,
    messages: [{ role: 'user', content: 'wait for the first token' }],
  });
  const started = performance.now();
  const pending: Array<Promise<unknown>> = [];
  /**
   * Responses by status (a stream's headers leave once its first byte is in: before that, none) and failures before
   * any, by message.
   */
  const statuses = new Map<number, number>();
  const failures = new Map<string, number>();
  const count = <K>(map: Map<K, number>, key: K) => map.set(key, (map.get(key) ?? 0) + 1);
  for (let i = 0; i < options.streams; i++) {
    pending.push(
      request(`${options.edgeUrl}/v1/chat/completions`, {
        method: 'POST',
        dispatcher,
        signal: abort.signal,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${options.apiKey}` },
        body,
      }).then(
        (response) => {
          count(statuses, response.statusCode);
          return response.body.dump().catch(() => undefined);
        },
        (error: unknown) => {
          if (!abort.signal.aborted) count(failures, String((error as Error).message));
        },
      ),
    );
    // Open in batches, each once the previous is in flight: the edge's listen backlog (511) is not
    // the thing measured (past it, connections are reset).
    if (i % BATCH === BATCH - 1) await untilInFlight(options.edgeUrl, i + 1 - BATCH, 10_000);
  }
  const inFlight = await untilInFlight(options.edgeUrl, options.streams, options.timeoutMs ?? 60_000);
  const openMs = performance.now() - started;
  const edgeAfter = await settledRss(options.edgePid);
  const agentAfter = options.agentPid === undefined ? undefined : await settledRss(options.agentPid);
  if (inFlight < options.streams)
    console.error(
      `idle streams: ${inFlight} in flight; responses by status ${JSON.stringify([...statuses])}; failures ${JSON.stringify([...failures])}`,
    );
  abort.abort();
  await Promise.allSettled(pending);
  await dispatcher.destroy();
  return {
    streams: options.streams,
    inFlight,
    edgeRssBeforeMiB: edgeBefore / 2 ** 20,
    edgeRssAfterMiB: edgeAfter / 2 ** 20,
    // Per stream actually in flight (all of them, unless the edge refused some).
    edgeKiBPerStream: (edgeAfter - edgeBefore) / 1024 / Math.max(inFlight, 1),
    ...(agentBefore === undefined || agentAfter === undefined
      ? {}
      : { agentKiBPerRun: (agentAfter - agentBefore) / 1024 / Math.max(inFlight / (options.agents ?? 1), 1) }),
    openMs,
  };
}
