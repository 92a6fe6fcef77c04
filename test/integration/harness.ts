/**
 * Starts the real processes — sim, edge, agent — from their compiled entry points, on loopback
 * with ports chosen by the OS, and waits for each one's readiness line (`Proc.ready()`).
 * Every process started is killed by `stopAll()` (call it in afterAll/afterEach).
 */
import path from 'node:path';
import { launch as launchProcess, repoRoot, Proc } from '../../apps/bench/src/processes';
import { sleep } from '@iop/core';

export { Proc };
export const ROOT = repoRoot(__dirname);
export const MODELS_DIR = path.resolve(ROOT, '../shared/models');
export const TINY_MODEL = path.join(MODELS_DIR, 'stories260K.gguf');
export const API_KEY = 'sk-iop-test-key-0001';
export const JOIN_TOKEN = 'join-token-test-0001';

const running = new Set<Proc>();

function launch(name: string, script: string, args: string[], env: NodeJS.ProcessEnv = {}): Proc {
  const proc = launchProcess(name, script, args, env);
  running.add(proc);
  void proc.exited.then(() => running.delete(proc));
  return proc;
}

export async function stopAll(): Promise<void> {
  await Promise.all([...running].map((proc) => proc.kill()));
}

export interface SimHandle {
  proc: Proc;
  port: number;
  url: string;
  /** The readiness line (`kvEventsEndpoint`, `kvEventsReplayEndpoint` when it publishes KV events). */
  ready: Record<string, unknown>;
}

export async function startSim(args: string[] = []): Promise<SimHandle> {
  const proc = launch('sim', 'apps/sim/dist/main.js', ['--port', '0', '--host', '127.0.0.1', ...args]);
  const line = await proc.ready();
  const port = line.port as number;
  return { proc, port, url: `http://127.0.0.1:${port}`, ready: line };
}

export interface EdgeHandle {
  proc: Proc;
  port: number;
  tunnelPort: number;
  baseURL: string;
  url: string;
}

export async function startEdge(
  options: { port?: number; tunnelPort?: number; args?: string[]; env?: NodeJS.ProcessEnv } = {},
): Promise<EdgeHandle> {
  const proc = launch(
    'edge',
    'apps/edge/dist/main.js',
    [
      '--port',
      String(options.port ?? 0),
      '--tunnel-port',
      String(options.tunnelPort ?? 0),
      '--api-keys',
      API_KEY,
      '--join-tokens',
      JOIN_TOKEN,
      ...(options.args ?? []),
    ],
    // No start-up grace: a test's unknown model is a 404 at once (the grace is for edge restarts).
    { IOP_LOG_LEVEL: 'debug', IOP_STARTUP_GRACE_MS: '0', ...options.env },
  );
  const line = await proc.ready();
  const port = line.port as number;
  return {
    proc,
    port,
    tunnelPort: line.tunnelPort as number,
    url: `http://127.0.0.1:${port}`,
    baseURL: `http://127.0.0.1:${port}/v1`,
  };
}

export interface AgentOptions {
  tunnelPort: number;
  id: string;
  backend?: 'openai' | 'llamacpp';
  backendUrl?: string;
  models?: string[];
  args?: string[];
  token?: string;
  /** Wait for the agent's readiness line: registered with an edge (default true). */
  waitRegistered?: boolean;
}

export async function startAgent(options: AgentOptions): Promise<Proc> {
  // Port 0: agents of parallel tests never compete for the default /metrics port (8082).
  const args = [
    '--edge',
    `http://127.0.0.1:${options.tunnelPort}`,
    '--join-token',
    options.token ?? JOIN_TOKEN,
    '--agent-id',
    options.id,
    '--backend',
    options.backend ?? 'openai',
    '--metrics-port',
    '0',
  ];
  if (options.backendUrl !== undefined) args.push('--backend-url', options.backendUrl);
  if (options.models !== undefined) args.push('--models', options.models.join(','));
  const proc = launch(`agent ${options.id}`, 'apps/agent/dist/main.js', [...args, ...(options.args ?? [])], {
    IOP_LOG_LEVEL: 'debug',
  });
  if (options.waitRegistered !== false) await proc.ready(30_000);
  return proc;
}

/** Polls `check` until it returns true or `timeoutMs` passes. */
export async function eventually(
  check: () => Promise<boolean> | boolean,
  timeoutMs = 10_000,
  intervalMs = 50,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await sleep(intervalMs);
  }
}

/**
 * The sum of a Prometheus metric's series at `url`/metrics whose labels include every one of
 * `labels` (text exposition format: `name{a="b",…} value`).
 */
export async function metricSum(url: string, name: string, labels: Record<string, string>): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const wanted = Object.entries(labels).map(([key, value]) => `${key}="${value}"`);
  let total = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith(`${name}{`) && wanted.every((label) => line.includes(label)))
      total += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return total;
}

/** Polls the edge's `/readyz` until it is 200: an agent (or a direct provider) takes runs there. */
export async function edgeReady(edge: Pick<EdgeHandle, 'url'>, timeoutMs = 30_000): Promise<void> {
  await eventually(async () => (await fetch(`${edge.url}/readyz`)).ok, timeoutMs);
}

export async function simRequests(sim: SimHandle): Promise<Array<Record<string, unknown>>> {
  const response = await fetch(`${sim.url}/_sim/requests`);
  return ((await response.json()) as { data: Array<Record<string, unknown>> }).data;
}
