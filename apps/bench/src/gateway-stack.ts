/**
 * The processes `npm run bench` measures (gateway-bench.ts): a sim, an edge with agents in front of it, and an edge
 * alone with the sim as a direct provider, each gateway process on the gateway's CPU (cpu-pinning.ts) and profiled when
 * `BENCH_CPU_PROF=1`.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { CpuPlan } from './cpu-pinning.js';
import { launch, launchAgent, type LaunchOptions, type Proc } from './processes.js';

export const API_KEY = 'sk-iop-bench-key-0001';
export const JOIN_TOKEN = 'iop-bench-join-token';
export const OUTPUT_TOKENS = 20;
export const MODEL = 'bench-model';
/** The sim without delays, whatever its flags (the sim's `instant` knob as a model-name suffix). */
export const INSTANT_MODEL = `${MODEL}@instant`;

const profile = process.env.BENCH_CPU_PROF === '1';

export interface SimKind {
  name: 'instant' | 'paced';
  args: string[];
  requests: Record<number, number>;
}

export interface Stack {
  sim: Proc;
  simUrl: string;
  edge: Proc;
  edgeUrl: string;
  agent: Proc;
  /** Agents beyond the first (the idle-streams stack: one per 1 000 streams). */
  moreAgents: Proc[];
  /** A second edge with the sim as a direct provider (no agent): the edge's cost alone. */
  edgeAlone?: Proc;
  edgeAloneUrl?: string;
}

async function startEdge(
  name: string,
  args: string[],
  options: LaunchOptions,
): Promise<{ proc: Proc; port: number; tunnelPort: number }> {
  const proc = launch(
    'edge',
    'apps/edge/dist/main.js',
    ['--port', '0', '--tunnel-port', '0', '--api-keys', API_KEY, '--join-tokens', JOIN_TOKEN, ...args],
    { IOP_LOG_LEVEL: 'info', IOP_DATA_DIR: mkdtempSync(path.join(os.tmpdir(), `iop-bench-${name}-`)) },
    options,
  );
  const ready = await proc.ready();
  return { proc, port: ready.port as number, tunnelPort: ready.tunnelPort as number };
}

export async function startStack(
  sim: SimKind,
  options: { agents?: number; agentMaxConcurrency?: number; edgeAlone?: boolean; pins?: CpuPlan | undefined } = {},
): Promise<Stack> {
  const simProc = launch(
    'sim',
    'apps/sim/dist/main.js',
    ['--port', '0', '--host', '127.0.0.1', '--models', MODEL, '--output-tokens', String(OUTPUT_TOKENS), ...sim.args],
    {},
    { cpus: options.pins?.load },
  );
  const simPort = (await simProc.ready()).port as number;
  const simUrl = `http://127.0.0.1:${simPort}`;
  /** A gateway process: on the gateway's CPU, profiled when `BENCH_CPU_PROF=1`. */
  const gateway = (name: string): LaunchOptions => ({
    execArgv: [
      ...(process.env.BENCH_GATEWAY_NODE_ARGS?.split(' ').filter(Boolean) ?? []),
      ...(profile
        ? ['--cpu-prof', `--cpu-prof-dir=${process.cwd()}/profiles`, `--cpu-prof-name=${name}-${sim.name}.cpuprofile`]
        : []),
    ],
    cpus: options.pins?.gateway,
  });
  const edge = await startEdge('edge', [], gateway('edge'));
  const agents: Proc[] = [];
  for (let i = 0; i < (options.agents ?? 1); i++) {
    agents.push(
      launchAgent(
        'agent',
        {
          tunnelPort: edge.tunnelPort,
          joinToken: JOIN_TOKEN,
          agentId: `bench-agent-${i}`,
          backendUrl: simUrl,
          models: `${MODEL},${INSTANT_MODEL}`,
          maxConcurrency: options.agentMaxConcurrency ?? 256,
        },
        i === 0 ? gateway('agent') : { cpus: options.pins?.gateway },
      ),
    );
  }
  await Promise.all(agents.map((agent) => agent.ready(30_000)));
  const [agent, ...moreAgents] = agents as [Proc, ...Proc[]];
  let alone: Awaited<ReturnType<typeof startEdge>> | undefined;
  if (options.edgeAlone === true) {
    const config = path.join(mkdtempSync(path.join(os.tmpdir(), 'iop-bench-direct-')), 'edge.json');
    writeFileSync(
      config,
      JSON.stringify({
        pool: {
          directProviders: [{ id: 'sim', baseUrl: simUrl, models: [MODEL, INSTANT_MODEL], maxConcurrency: 256 }],
        },
      }),
    );
    alone = await startEdge('edge-alone', ['--config', config], gateway('edge-alone'));
  }
  for (const proc of [simProc, edge.proc, ...agents, ...(alone === undefined ? [] : [alone.proc])]) proc.detach();
  return {
    sim: simProc,
    simUrl,
    edge: edge.proc,
    edgeUrl: `http://127.0.0.1:${edge.port}`,
    agent,
    moreAgents,
    ...(alone === undefined ? {} : { edgeAlone: alone.proc, edgeAloneUrl: `http://127.0.0.1:${alone.port}` }),
  };
}

export async function stopStack(stack: Stack): Promise<void> {
  await Promise.all([
    stack.agent.kill('SIGTERM'),
    ...stack.moreAgents.map((agent) => agent.kill('SIGTERM')),
    stack.edge.kill('SIGTERM'),
    stack.edgeAlone?.kill('SIGTERM'),
  ]);
  await stack.sim.kill('SIGTERM');
}
