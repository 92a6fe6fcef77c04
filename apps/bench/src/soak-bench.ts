#!/usr/bin/env node
/**
 * `npm run bench:soak`: an edge, N agents (`--backend openai`) and one GPU-profile sim per agent
 * (gpu-h100-8b, real-time by default), every agent slot busy for `--duration` (default 5 min):
 * stream and non-stream, Chat Completions, Responses and Messages through the official clients,
 * client aborts and slow readers; agent-1 is killed (SIGKILL) at 30 % and restarted 5 s later; the
 * edge is restarted (SIGTERM, same ports) at 60 %. Then the load stops, the counts settle, and it
 * prints the summary (soak/soak-report.ts). Exit status 1 when a backend request is orphaned or
 * the edge's, agents' and backends' in-flight counts disagree at rest.
 *
 * Options (flags, or env): --duration 5m (SOAK_DURATION), --agents 3 (SOAK_AGENTS),
 * --concurrency 8 per agent (SOAK_CONCURRENCY), --time-scale 1 (SOAK_TIME_SCALE),
 * --max-tokens 200:2000 (SOAK_MAX_TOKENS).
 */
import os from 'node:os';
import { parseArgs } from 'node:util';
import { SoakClients, type Outcome } from './soak/soak-clients.js';
import { ADMIN_KEY, API_KEY, SOAK_MODEL, SoakCluster } from './soak/soak-cluster.js';
import { joinInFlight, readAgentLoads, readBackendLoad, resources, type InFlightSample } from './soak/soak-observer.js';
import { formatSummary, soakPassed, type Window } from './soak/soak-report.js';
import { parseDuration, parseRange } from './cli-options.js';
import { sleep } from '@iop/core';

const USAGE = `Usage: npm run bench:soak -- [--duration 5m] [--agents 3] [--concurrency 8] [--time-scale 1] [--max-tokens 200:2000]
  --duration      load time (30s, 5m; env SOAK_DURATION)
  --agents        agents, each in front of its own GPU-profile sim (env SOAK_AGENTS)
  --concurrency   each agent's --max-concurrency; clients = agents × concurrency (env SOAK_CONCURRENCY)
  --time-scale    the sims' --time-scale: 1 = real H100 timing, 0.5 = twice as fast (env SOAK_TIME_SCALE)
  --max-tokens    max_tokens per request, min:max (env SOAK_MAX_TOKENS)`;

function parseOptions() {
  try {
    return parseArgs({
      options: {
        help: { type: 'boolean', short: 'h' },
        duration: { type: 'string', default: process.env.SOAK_DURATION ?? '5m' },
        agents: { type: 'string', default: process.env.SOAK_AGENTS ?? '3' },
        concurrency: { type: 'string', default: process.env.SOAK_CONCURRENCY ?? '8' },
        'time-scale': { type: 'string', default: process.env.SOAK_TIME_SCALE ?? '1' },
        'max-tokens': { type: 'string', default: process.env.SOAK_MAX_TOKENS ?? '200:2000' },
      },
    }).values;
  } catch (error) {
    return usageError((error as Error).message);
  }
}

const values = parseOptions();
if (values.help === true) {
  console.log(USAGE);
  process.exit(0);
}
function usageError(message: string): never {
  console.error(`${message}\n\n${USAGE}`);
  process.exit(2);
}

function option<T>(name: string, parse: () => T, valid: (value: T) => boolean = () => true): T {
  try {
    const value = parse();
    if (!valid(value)) usageError(`--${name}: invalid value`);
    return value;
  } catch (error) {
    return usageError(`--${name}: ${(error as Error).message}`);
  }
}

const durationMs = option('duration', () => parseDuration(values.duration));
const agents = option(
  'agents',
  () => Number(values.agents),
  (value) => Number.isInteger(value) && value >= 1,
);
const concurrency = option(
  'concurrency',
  () => Number(values.concurrency),
  (value) => Number.isInteger(value) && value >= 1,
);
const timeScale = option(
  'time-scale',
  () => Number(values['time-scale']),
  (value) => Number.isFinite(value) && value > 0,
);
const maxTokens = option('max-tokens', () => parseRange(values['max-tokens']));
const SAMPLE_MS = 1_000;
const SETTLE_DEADLINE_MS = 60_000;
const DRAIN_DEADLINE_MS = 120_000;

async function sample(
  cluster: SoakCluster,
): Promise<{ inFlight: InFlightSample[]; heartbeatAgeMs: number; backendAborted: number } | undefined> {
  try {
    const [loads, backends] = await Promise.all([
      readAgentLoads(cluster.origin, ADMIN_KEY),
      Promise.all(cluster.sims.map((sim) => readBackendLoad(sim.url))),
    ]);
    const now = Date.now();
    return {
      inFlight: joinInFlight(
        cluster.agents.map((_, index) => cluster.agentId(index)),
        loads,
        backends,
      ),
      heartbeatAgeMs: Math.max(0, ...loads.map((load) => now - load.lastHeartbeatAt)),
      backendAborted: backends.reduce((sum, backend) => sum + backend.aborted, 0),
    };
  } catch {
    return undefined; // the edge is restarting
  }
}

function processResources(cluster: SoakCluster) {
  return [
    resources('edge', cluster.edge!.pid),
    ...cluster.agents.map((agent, index) => resources(cluster.agentId(index), agent.pid)),
  ];
}

async function main(): Promise<void> {
  console.log(
    `machine: ${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}`,
  );
  console.log(
    `soak: ${(durationMs / 1000).toFixed(0)} s, 1 edge, ${agents} agents × max concurrency ${concurrency} (${agents * concurrency} closed-loop clients), ` +
      `sims gpu-h100-8b at time-scale ${timeScale}, max_tokens ${maxTokens.min}–${maxTokens.max}; 10 % aborts, 10 % slow readers\n`,
  );
  const cluster = new SoakCluster({ agents, concurrencyPerAgent: concurrency, timeScale, profile: 'gpu-h100-8b' });
  // Ctrl-C (or SIGTERM) mid-soak takes the edge, agents and sims down with it.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      void cluster.stop().finally(() => process.exit(130));
    });
  }
  try {
    await cluster.start();
    const resourcesStart = processResources(cluster);
    const outcomes: Outcome[] = [];
    const windows: Window[] = [];
    const clients = new SoakClients(
      {
        origin: cluster.origin,
        apiKey: API_KEY,
        model: SOAK_MODEL,
        maxTokens,
        abortShare: 0.1,
        abortAfterMs: { min: 300, max: 5_000 },
        slowReaderShare: 0.1,
        pauseMs: { min: 3_000, max: 20_000 },
        seed: 9,
      },
      (outcome) => outcomes.push(outcome),
    );
    const startedAt = Date.now();
    let maxDisagreementUnderLoad = 0;
    let maxHeartbeatAgeMs = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const snapshot = await sample(cluster);
        if (snapshot !== undefined) {
          maxDisagreementUnderLoad = Math.max(
            maxDisagreementUnderLoad,
            ...snapshot.inFlight.map((entry) => entry.disagreement),
          );
          maxHeartbeatAgeMs = Math.max(maxHeartbeatAgeMs, snapshot.heartbeatAgeMs);
        }
        const elapsed = Date.now() - startedAt;
        if (process.stderr.isTTY)
          process.stderr.write(
            `\r${(elapsed / 1000).toFixed(0)} s: ${outcomes.length} requests, ${outcomes.filter((outcome) => !outcome.ok).length} failed   `,
          );
        await sleep(SAMPLE_MS);
      }
    })();
    const load = clients.run(agents * concurrency);

    const disruptions = (async () => {
      await sleep(durationMs * 0.3);
      const kill: Window = {
        name: `${cluster.agentId(0)} SIGKILL + restart`,
        startAt: Date.now(),
        endAt: Number.POSITIVE_INFINITY,
      };
      windows.push(kill);
      await cluster.killAgent(0);
      await sleep(5_000);
      await cluster.restartAgent(0);
      kill.endAt = Date.now() + 2_000;
      await sleep(Math.max(0, startedAt + durationMs * 0.6 - Date.now()));
      const restart: Window = { name: 'edge restart', startAt: Date.now(), endAt: Number.POSITIVE_INFINITY };
      windows.push(restart);
      await cluster.restartEdge();
      restart.endAt = Date.now() + 2_000;
    })();

    await sleep(durationMs);
    clients.stop();
    await disruptions;
    const drainTimer = setTimeout(() => clients.abortAll(), DRAIN_DEADLINE_MS);
    await load;
    clearTimeout(drainTimer);
    const loadEndedAt = Date.now();
    sampling = false;
    await sampler;

    // At rest: wait until every count is 0, then one more heartbeat interval for the reported counts.
    let settleMs: number | null = null;
    let atRest: InFlightSample[] = [];
    let heartbeatAgeAtEndMs = 0;
    let backendAborted = 0;
    while (Date.now() - loadEndedAt < SETTLE_DEADLINE_MS) {
      const snapshot = await sample(cluster);
      if (snapshot !== undefined) {
        atRest = snapshot.inFlight;
        heartbeatAgeAtEndMs = snapshot.heartbeatAgeMs;
        backendAborted = snapshot.backendAborted;
        if (snapshot.inFlight.every((entry) => entry.edge === 0 && entry.reported === 0 && entry.backend === 0)) {
          settleMs = Date.now() - loadEndedAt;
          break;
        }
      }
      await sleep(SAMPLE_MS);
    }
    const resourcesEnd = processResources(cluster);
    const summary = {
      outcomes,
      windows,
      maxDisagreementUnderLoad,
      atRest,
      settleMs,
      maxHeartbeatAgeMs,
      heartbeatAgeAtEndMs,
      resourcesStart,
      resourcesEnd,
      backendAborted,
      elapsedMs: loadEndedAt - startedAt,
    };
    if (process.stderr.isTTY) process.stderr.write('\n');
    console.log(formatSummary(summary));
    if (!soakPassed(summary)) process.exitCode = 1;
  } finally {
    await cluster.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
