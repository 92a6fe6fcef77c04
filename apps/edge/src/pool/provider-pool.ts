/**
 * The provider pool: every provider (tunnelled agents and direct providers) behind the model
 * groups of the `pool` config. A facade over three parts, each its own module: the model catalog
 * (`model-catalog.ts`: names, providers, what they serve), the router (`router.ts`: group state
 * and the pick, over one `CandidateSnapshot` per request) and the reloader (`pool-reload.ts`),
 * with the acquire step (`run-acquirer.ts`), the admission queue, the retry policy and the metrics.
 *
 * - `resolve(name)`: the client's model name (group, alias, or a served model of that name) → group.
 * - `acquire(group, …)`: picks a provider and starts the run in one synchronous step (so two
 *   requests never take the same last slot), or waits in the group's bounded admission queue.
 *   When no provider of the group can take the request now but one of its `fallbacks` can, the
 *   fallback serves it at once. Picking: the agent holding the request's longest cached prefix
 *   (`residency`, fed by the tunnel) within the bounded load, else prefix affinity (consistent
 *   hashing with bounded load) when the request has an affinity key, else power of two choices
 *   on live load; always among providers that serve one of the group's targets, carry its labels
 *   and that the group's outlier detector allows. Targets are drawn by weight first when a group has several.
 * - `report(ticket, outcome)`: an attempt's verdict, for outlier ejection (logged, counted).
 * - `accepting(group)`: whether any provider could take a retry at all (not all ejected / draining).
 * - `snapshot()`: the state for the admin API and tests (`PoolSnapshot`).
 * - `prepareReload(config)` + `applyReload(prepared)`: a config reload (see `applyReload`).
 *
 * The queue is served when a run ends (a `RunRegistry` finish listener, a `DirectProvider`'s
 * release callback), when an agent joins or leaves (an `AgentRegistry` listener), and every
 * `NOTIFY_INTERVAL_MS` while requests wait (drain ends arrive by heartbeat).
 */
import { IopError } from '@iop/core';
import type { Registry } from 'prom-client';
import type { Logger } from '../logger.js';
import type { AgentDirectory as AgentRegistry, RunEnds as RunRegistry } from './agent-directory.js';
import { AdmissionQueue } from './admission-queue.js';
import { CandidateSnapshot } from './candidate-snapshot.js';
import { DirectProvider } from './direct-provider.js';
import { ModelCatalog, RECONNECT_RETRY_AFTER_SECONDS } from './model-catalog.js';
import type { AttemptOutcome, OutlierTicket } from './outlier-detector.js';
import type { ModelResolver } from './model-resolver.js';
import type { ModelGroup, ModelTarget, PoolConfig } from './pool-config.js';
import { PoolReloader, type PoolConfigChanges, type PreparedPoolReload } from './pool-reload.js';
import { PoolMetrics } from './pool-metrics.js';
import { groupSnapshot, type PoolSnapshot } from './pool-snapshot.js';
import type { Clock, PoolProvider, Random } from './provider.js';
import { RetryPolicy, type RequestAttempts } from './retry-policy.js';
import { Router, type PoolPick, type RouteOptions } from './router.js';
import { ResidencyIndex } from './residency-index.js';
import { KV_EVENTS_CAPABILITY } from './prefix-keys.js';
import { RunAcquirer, type AcquiredRun, type AcquireOptions } from './run-acquirer.js';
import type { RunStream } from './run-stream.js';

export type { PoolGroupSnapshot, PoolProviderSnapshot, PoolSnapshot } from './pool-snapshot.js';

const NOTIFY_INTERVAL_MS = 200;

export { RECONNECT_RETRY_AFTER_SECONDS } from './model-catalog.js';
export type { PreparedPoolReload } from './pool-reload.js';
export type { PoolPick } from './router.js';
export type { AcquiredRun, AcquireOptions } from './run-acquirer.js';

export interface ProviderPoolOptions {
  config: PoolConfig;
  registry: AgentRegistry;
  /** The tunnel's runs: each one that ends frees a slot (the queue is served). */
  runs: RunRegistry;
  metrics: Registry;
  logger: Logger;
  now?: Clock;
  random?: Random;
  /**
   * For this long after start (ms), a name no connected provider serves is a 503 `no_capacity`,
   * not a 404: after an edge restart its agents are still reconnecting and the edge has not yet
   * seen the names they serve. Default 0 (the edge passes its `startupGraceMs`).
   */
  startupGraceMs?: number;
}

export class ProviderPool {
  private stopped = false;
  readonly queue = new AdmissionQueue();
  readonly metrics: PoolMetrics;
  /** Names, providers and what they serve (`model-catalog.ts`). */
  readonly catalog: ModelCatalog;
  /** Group state and the pick (`router.ts`). */
  readonly router: Router;
  /** What the agents' KV caches hold (fed by the tunnel, read by the router). */
  readonly residency: ResidencyIndex;
  private readonly reloader: PoolReloader;
  private readonly acquirer: RunAcquirer;
  private retryPolicy: RetryPolicy;
  private readonly timer: NodeJS.Timeout;
  /** Connected agents that report residency (`kv-events` capability). */
  private kvEventsAgents = 0;
  /** Serves every group's queue (a slot may have freed); one function for every caller. */
  private readonly notifyAll = (): void => {
    for (const group of Object.keys(this.queue.stats().queued)) this.queue.notify(group);
  };

  constructor(options: ProviderPoolOptions) {
    const now = options.now ?? Date.now;
    const random = options.random ?? Math.random;
    this.retryPolicy = new RetryPolicy(options.config.retry, { now, random });
    this.metrics = new PoolMetrics(
      options.metrics,
      () => this.queue.stats().queued,
      () => this.residency.entries,
    );
    this.residency = new ResidencyIndex({ onRefused: (reason) => this.metrics.residencyRefused.inc({ reason }) });
    const makeDirect = (config: PoolConfig['directProviders'][number]) => new DirectProvider(config, this.notifyAll);
    this.catalog = new ModelCatalog({
      config: options.config,
      registry: options.registry,
      direct: options.config.directProviders.map(makeDirect),
      now,
      startupGraceMs: options.startupGraceMs,
    });
    this.router = new Router({
      catalog: this.catalog,
      metrics: this.metrics,
      logger: options.logger,
      now,
      random,
      residency: this.residency,
    });
    this.reloader = new PoolReloader({
      catalog: this.catalog,
      router: this.router,
      queue: this.queue,
      makeDirect,
      now,
      random,
    });
    this.acquirer = new RunAcquirer({
      catalog: this.catalog,
      router: this.router,
      queue: this.queue,
      metrics: this.metrics,
    });
    options.registry.addListener((session, change) => {
      this.catalog.agentChanged(session, change);
      if (session.capabilities.has(KV_EVENTS_CAPABILITY)) this.kvEventsAgents += change === 'added' ? 1 : -1;
      if (change === 'removed') {
        this.router.forgetProvider(session.agentId);
        this.residency.forget(session.sessionId);
      }
      this.notifyAll();
    });
    options.runs.addFinishListener(this.notifyAll);
    this.timer = setInterval(this.notifyAll, NOTIFY_INTERVAL_MS);
    this.timer.unref();
  }

  /** Whether some connected agent reports residency: requests then get prefix keys (prefix-keys.ts). */
  get cacheAware(): boolean {
    return this.kvEventsAgents > 0;
  }

  /** The pool config in service (replaced whole by a reload). */
  get config(): PoolConfig {
    return this.catalog.config;
  }

  /** Client model names → groups, for the config in service. */
  get resolver(): ModelResolver {
    return this.catalog.resolver;
  }

  get retry(): RetryPolicy {
    return this.retryPolicy;
  }

  /** The direct providers in service (not those a reload retired). */
  get direct(): readonly DirectProvider[] {
    return this.catalog.direct;
  }

  /** The agent registry (connected agents), for listings. */
  get agents(): AgentRegistry {
    return this.catalog.agents;
  }

  /** The group serving a client's model name (configured group or alias, else implicit). */
  resolve(name: string): ModelGroup {
    return this.router.resolve(name);
  }

  /** The configured group called `name`, if any. */
  group(name: string): ModelGroup | undefined {
    return this.router.group(name);
  }

  /** Every provider that serves one of the group's targets, with the target it serves. */
  candidates(group: ModelGroup): Map<PoolProvider, ModelTarget> {
    return this.catalog.candidates(group);
  }

  /** Largest context length any provider reports for the served model `model`, tokens (0 = unknown). */
  contextLength(model: string): number {
    return this.catalog.contextLength(model);
  }

  /** The tool-call id format the served model `model` needs (`alnum9` when any target says so). */
  toolIdFormatOf(model: string): 'any' | 'alnum9' {
    return this.catalog.toolIdFormatOf(model);
  }

  /** Whether a group (by client name) has a target whose backend restricts tool-call ids. */
  restrictsToolIds(name: string): boolean {
    return this.resolve(name).targets.some((target) => target.toolIdFormat === 'alnum9');
  }

  /** See `ModelCatalog.knows`. */
  knows(name: string): boolean {
    return this.catalog.knows(name);
  }

  /** See `ModelCatalog.noProviderError`. */
  noProviderError(name: string): IopError {
    return this.catalog.noProviderError(name);
  }

  /**
   * Whether some provider of the group or of its fallbacks takes requests at all (it may be busy,
   * so the request may queue): false when every one is ejected as an outlier, draining or gone.
   */
  accepting(group: ModelGroup): boolean {
    return this.router.anyAccepting(this.router.current(group), new CandidateSnapshot(this.catalog));
  }

  /** Whether some provider of the group, other than `exclude`, could take a request now. */
  canRoute(group: ModelGroup, exclude?: ReadonlySet<string>): boolean {
    return this.pick(group, { exclude }) !== undefined;
  }

  /** Chooses a provider (no side effect); undefined when none is eligible now. */
  pick(group: ModelGroup, options: RouteOptions = {}): PoolPick | undefined {
    return this.router.pick(this.router.current(group), new CandidateSnapshot(this.catalog), options);
  }

  /**
   * Picks a provider and starts the run (`start`) at once, or waits in the group's queue (`RunAcquirer.acquire`,
   * run-acquirer.ts, says how and what it throws).
   */
  acquire(group: ModelGroup, options: AcquireOptions, start: (pick: PoolPick) => RunStream): Promise<AcquiredRun> {
    return this.acquirer.acquire(group, options, start);
  }

  /** Records an attempt's verdict for the outlier detector of `group`. */
  report(group: ModelGroup, ticket: OutlierTicket, outcome: AttemptOutcome): void {
    this.metrics.attempts.inc({ group: group.name, provider: ticket.providerId, outcome });
    this.router.report(group, ticket, outcome);
  }

  /** Begins a client request for the pool-wide retry budget. */
  begin(): RequestAttempts {
    return this.retry.begin();
  }

  /**
   * Builds what a new pool config needs (resolver, retry policy, new direct providers) without
   * putting anything in service; `applyReload` then swaps it in. Direct providers whose config is
   * unchanged are kept (same instance, same load and outlier state).
   * @throws ConfigError when `next` is invalid (a duplicate name or alias, a fallback to an unknown
   *   group…, see `parsePoolConfig`): nothing has changed then.
   */
  prepareReload(next: PoolConfig): PreparedPoolReload {
    return this.reloader.prepare(next, this.retryPolicy.budget);
  }

  /** Closes the direct providers a prepared reload created; for a reload that will not be applied. */
  discardReload(prepared: PreparedPoolReload): void {
    this.reloader.discard(prepared);
  }

  /**
   * Puts a prepared config in service in one synchronous step; the next request routes by it.
   * - Runs in flight keep their provider. A direct provider removed (or replaced, when its config
   *   changed) takes no new run, finishes its runs in flight, then closes its connections; its
   *   outlier state is forgotten. Added ones take requests at once; unchanged ones keep their state.
   * - A group that still exists under the same name keeps its outlier detector (new settings apply
   *   from the next failure) and its affinity ring (rebuilt when `affinity.loadFactor` changed);
   *   its queued waiters stay and route by the new definition.
   * - A group that no longer exists (or whose name now means something else: an alias, a served
   *   model) loses its state; its queued waiters are resolved again by their group name, which
   *   ends in a 404 `model_not_found` when nothing serves that name any more (a 503
   *   `no_capacity` when it is still a known name, see `acquire`).
   * - The retry budget keeps its window; its ratio and reserve follow the new settings.
   * @returns what changed.
   * @throws Error when `prepared` was built against another config than the one in service.
   */
  applyReload(prepared: PreparedPoolReload): PoolConfigChanges {
    const changes = this.reloader.apply(prepared);
    this.retryPolicy = prepared.retry;
    this.retryPolicy.budget.configure(prepared.config.retry);
    this.notifyAll();
    return changes;
  }

  snapshot(): PoolSnapshot {
    const resident = (provider: PoolProvider) =>
      provider.sessionId === undefined ? 0 : this.residency.sizeOf(provider.sessionId);
    const groups = this.router
      .groupStates()
      .map((state) =>
        groupSnapshot(state, (group) => this.catalog.candidates(group), this.queue.size(state.group.name), resident),
      );
    const { rejectedFull, rejectedTimeout } = this.queue.stats();
    return { groups, retryBudget: this.retry.budget.snapshot(), queue: { rejectedFull, rejectedTimeout } };
  }

  /**
   * Starts no run from now on: every queued request and every later `acquire` (new requests on
   * kept-alive connections, retries) is refused with 503 `no_capacity` and `Retry-After: 1`
   * (Anthropic 529), so clients retry on another edge at once instead of waiting for runs the
   * shutdown deadline would cut. Runs already started go on.
   */
  stopAdmitting(): void {
    this.stopped = true;
    this.queue.close(
      new IopError('no_capacity', 'the edge is shutting down; retry on another edge', {
        retryAfterSeconds: RECONNECT_RETRY_AFTER_SECONDS,
      }),
    );
  }

  /**
   * False once `stopAdmitting` ran (the edge is shutting down): no new agent joins it either
   * (tunnel/tunnel-service.ts).
   */
  get admitting(): boolean {
    return !this.stopped;
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await Promise.all([...this.catalog.direct.map((provider) => provider.close()), this.reloader.close()]);
  }
}
