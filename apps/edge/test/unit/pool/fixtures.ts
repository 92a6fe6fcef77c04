/**
 * Test helpers: a seeded generator (mulberry32), a plain provider, a manual clock, a pool, fake runs and agent
 * sessions.
 */
import { create } from '@bufbuild/protobuf';
import { AsyncQueue } from '@iop/core';
import { ModelInfoSchema, RegisterSchema } from '@iop/proto';
import pino from 'pino';
import { Registry } from 'prom-client';
import { AgentRegistry } from '../../../src/tunnel/agent-registry.js';
import { parsePoolConfig } from '../../../src/pool/pool-config.js';
import type { RunStream } from '../../../src/pool/run-stream.js';
import type { RoutedProvider } from '../../../src/pool/provider.js';
import { ProviderPool, type PoolPick } from '../../../src/pool/provider-pool.js';
import { AgentSession } from '../../../src/tunnel/agent-session.js';
import { RunRegistry } from '../../../src/tunnel/run-registry.js';

import { seededRandom } from '@iop/core';

export { seededRandom };

export interface TestProvider extends RoutedProvider {
  closed: boolean;
}

export function provider(id: string, fields: Partial<Omit<TestProvider, 'available'>> = {}): TestProvider {
  const base = {
    id,
    maxConcurrency: 10,
    inFlight: 0,
    weight: 1,
    labels: {},
    load: { queued: 0 },
    closed: false,
    ...fields,
  };
  return Object.defineProperty(base, 'available', {
    get(this: TestProvider) {
      return !this.closed && this.inFlight < this.maxConcurrency;
    },
    enumerable: true,
  }) as TestProvider;
}

export class ManualClock {
  constructor(public ms = 1_000_000) {}
  readonly now = (): number => this.ms;
  advance(ms: number): void {
    this.ms += ms;
  }
}

/** A pool over `raw` (a pool config section), silent logs, a manual clock and a seeded generator. */
export function makePool(
  raw: Record<string, unknown>,
  options: { clock?: ManualClock; registry?: AgentRegistry; startupGraceMs?: number } = {},
): { pool: ProviderPool; metrics: Registry; clock: ManualClock } {
  const metrics = new Registry();
  const clock = options.clock ?? new ManualClock();
  const pool = new ProviderPool({
    config: parsePoolConfig(raw),
    registry: options.registry ?? new AgentRegistry(),
    runs: new RunRegistry(),
    metrics,
    logger: pino({ level: 'silent' }),
    now: clock.now,
    random: seededRandom(7),
    ...(options.startupGraceMs === undefined ? {} : { startupGraceMs: options.startupGraceMs }),
  });
  return { pool, metrics, clock };
}

/**
 * Registers an afterEach that closes every pool passed to the returned `track` (direct providers
 * hold undici clients and the pool a timer). Call once at a test file's top level.
 */
export function trackPools(): <T extends { pool: ProviderPool }>(made: T) => T {
  const pools: ProviderPool[] = [];
  afterEach(async () => {
    await Promise.all(pools.splice(0).map((pool) => pool.close()));
  });
  return (made) => {
    pools.push(made.pool);
    return made;
  };
}

/** A direct provider entry of a pool config (nothing listens at its URL). */
export const directConfig = (id: string, models: string[], fields: Record<string, unknown> = {}) => ({
  id,
  baseUrl: `http://127.0.0.1:9/${id}/v1`,
  models,
  ...fields,
});

/** A run that holds a slot of its provider until `end()`; no I/O. */
export function fakeStart(pick: PoolPick): RunStream & { end(): void } {
  pick.provider.inFlight++;
  let finished = false;
  return {
    runId: `run-${pick.provider.id}`,
    providerId: pick.provider.id,
    accepted: true,
    frames: new AsyncQueue(4),
    get isFinished() {
      return finished;
    },
    cancel() {
      this.end();
    },
    end() {
      if (finished) return;
      finished = true;
      pick.provider.inFlight--;
    },
  };
}

/** A connected agent session serving `models` (no tunnel behind it). */
export function agentSession(
  agentId: string,
  models: Array<string | { id: string; contextLength?: number; apis?: string[] }>,
  maxConcurrency = 4,
): AgentSession {
  const infos = models.map((model) => create(ModelInfoSchema, typeof model === 'string' ? { id: model } : model));
  return new AgentSession(
    create(RegisterSchema, { agentId, maxConcurrency, models: infos }),
    `ses_${agentId}`,
    new RunRegistry(),
  );
}
