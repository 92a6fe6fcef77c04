/**
 * The soak's processes: one edge on fixed ports (so it can be restarted in place), and N agents
 * (`--backend openai`), each in front of its own sim running the GPU profile. All log at `warn`;
 * readiness is read from the sim's readiness line, the edge's `/healthz` and `/admin/agents`.
 */
import os from 'node:os';
import { launch, launchAgent, type Proc } from '../processes.js';
import { freePort, waitForHttp } from '../ports.js';
import { readAgentLoads } from './soak-observer.js';
import { sleep } from '@iop/core';

export const SOAK_MODEL = 'soak-model';
export const API_KEY = 'sk-iop-soak-bench-0001';
export const ADMIN_KEY = 'iop-soak-admin-key-000001';
const JOIN_TOKEN = 'iop-soak-join-token-0001';

export interface ClusterOptions {
  agents: number;
  /** Each agent's `--max-concurrency`. */
  concurrencyPerAgent: number;
  /** The sims' `--time-scale`. */
  timeScale: number;
  /** The sims' GPU profile. */
  profile: string;
}

export interface SimNode {
  proc: Proc;
  url: string;
}

export class SoakCluster {
  edge: Proc | undefined;
  readonly sims: SimNode[] = [];
  readonly agents: Proc[] = [];
  origin = '';
  private edgePort = 0;
  private tunnelPort = 0;

  constructor(readonly options: ClusterOptions) {}

  async start(): Promise<void> {
    this.edgePort = await freePort();
    this.tunnelPort = await freePort();
    this.origin = `http://127.0.0.1:${this.edgePort}`;
    await this.startEdge();
    for (let index = 0; index < this.options.agents; index++) {
      const sim = launch(`sim-${index + 1}`, 'apps/sim/dist/main.js', [
        '--port',
        '0',
        '--models',
        SOAK_MODEL,
        '--profile',
        this.options.profile,
        '--time-scale',
        String(this.options.timeScale),
        '--request-log-size',
        '1000',
      ]);
      const port = (await sim.ready()).port as number;
      this.sims.push({ proc: sim, url: `http://127.0.0.1:${port}` });
      this.agents.push(this.launchAgent(index));
    }
    await this.waitForAgents(this.options.agents, 30_000);
  }

  agentId(index: number): string {
    return `agent-${index + 1}`;
  }

  private launchAgent(index: number): Proc {
    return launchAgent(this.agentId(index), {
      tunnelPort: this.tunnelPort,
      joinToken: JOIN_TOKEN,
      agentId: this.agentId(index),
      backendUrl: this.sims[index]!.url,
      models: SOAK_MODEL,
      maxConcurrency: this.options.concurrencyPerAgent,
      logLevel: 'warn',
    });
  }

  private async startEdge(): Promise<void> {
    this.edge = launch(
      'edge',
      'apps/edge/dist/main.js',
      [
        '--port',
        String(this.edgePort),
        '--tunnel-port',
        String(this.tunnelPort),
        '--api-keys',
        API_KEY,
        '--join-tokens',
        JOIN_TOKEN,
        '--admin-keys',
        ADMIN_KEY,
      ],
      { IOP_LOG_LEVEL: 'warn', IOP_DATA_DIR: os.tmpdir() },
    );
    await waitForHttp(`${this.origin}/healthz`, 20_000);
  }

  /** Resolves once `count` distinct agent ids are connected to the edge. */
  async waitForAgents(count: number, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const loads = await readAgentLoads(this.origin, ADMIN_KEY).catch(() => []);
      if (new Set(loads.map((load) => load.id)).size >= count) return;
      if (Date.now() > deadline)
        throw new Error(`only ${loads.length} of ${count} agents joined within ${timeoutMs} ms`);
      await sleep(200);
    }
  }

  /** SIGKILLs agent `index`; returns once it has exited. */
  async killAgent(index: number): Promise<void> {
    await this.agents[index]!.kill('SIGKILL');
  }

  /** Starts agent `index` again with the same id, and waits until the edge lists it. */
  async restartAgent(index: number): Promise<void> {
    this.agents[index] = this.launchAgent(index);
    await this.waitForAgents(this.options.agents, 30_000);
  }

  /**
   * Stops the edge with SIGTERM (SIGKILL after 15 s) and starts a new one on the same ports; the
   * agents reconnect on their own. Resolves once every agent is back.
   */
  async restartEdge(): Promise<void> {
    const old = this.edge!;
    const forced = setTimeout(() => void old.kill('SIGKILL'), 15_000);
    await old.kill('SIGTERM');
    clearTimeout(forced);
    await this.startEdge();
    await this.waitForAgents(this.options.agents, 60_000);
  }

  all(): Proc[] {
    return [...(this.edge === undefined ? [] : [this.edge]), ...this.agents, ...this.sims.map((sim) => sim.proc)];
  }

  async stop(): Promise<void> {
    await Promise.all(this.all().map((proc) => proc.kill('SIGKILL')));
  }
}
