/**
 * The provider pool: every provider (tunnelled agents and direct providers) behind the model
 * groups of the `pool` config, with the routing and resilience parts wired together.
 *
 * - `resolve(name)`: the client's model name (group, alias, or a served model of that name) → group.
 * - `acquire(group, …)`: picks a provider and starts the run in one synchronous step (so two
 *   requests never take the same last slot), or waits in the group's bounded admission queue.
 *   When no provider of the group can take the request now but one of its `fallbacks` can, the
 *   fallback serves it at once. Picking: prefix affinity (consistent hashing with bounded load)
 *   when the request has an affinity key, else power of two choices on live load; always among
 *   providers that serve one of the group's targets, carry its labels and that the group's
 *   outlier detector allows. Targets are drawn by weight first when a group has several.
 * - `report(ticket, outcome)`: an attempt's verdict, for outlier ejection (logged, counted).
 * - `accepting(group)`: whether any provider could take a retry at all (not all ejected / draining).
 * - `snapshot()`: the state for the admin API and tests (`PoolSnapshot`).
 * - `prepareReload(config)` + `applyReload(prepared)`: a config reload (see `applyReload`).
 *
 * The queue is served when a run ends (RunRegistry / DirectProvider hook), when an agent joins,
 * and every `NOTIFY_INTERVAL_MS` while requests wait (drain ends arrive by heartbeat).
 */
import { IopError, excerpt } from '@iop/core';
import type { Registry } from 'prom-client';
import type { Logger } from '../logger.js';
import type { AgentRegistry } from './agent-registry.js';
import type { RunRegistry } from '../tunnel/run-registry.js';
import { AdmissionQueue } from './admission-queue.js';
import { DirectProvider } from './direct-provider.js';
import { OutlierDetector, type AttemptOutcome, type OutlierTicket } from './outlier-detector.js';
import { P2cPicker, isEligible, type PickOptions } from './p2c.js';
import { ModelResolver, parsePoolConfig, type ModelGroup, type ModelTarget, type PoolConfig } from './pool-config.js';
import { diffPoolConfig, type PoolConfigChanges } from './pool-reload.js';
import { PoolMetrics } from './pool-metrics.js';
import { groupSnapshot, type PoolGroupState, type PoolSnapshot } from './pool-snapshot.js';
import { PrefixAffinity } from './prefix-affinity.js';
import { hasLabels, type Clock, type PoolProvider, type Random } from './provider.js';
import type { RunStream } from './run-stream.js';
import { RetryPolicy, type RequestAttempts } from './retry-policy.js';
import { ServedNames } from './served-names.js';
import { AttemptTrace, endRunSpans } from '../telemetry/request-tracing.js';

export type { PoolGroupSnapshot, PoolProviderSnapshot, PoolSnapshot } from './pool-snapshot.js';

const NOTIFY_INTERVAL_MS = 200;

/** `Retry-After` of a 503 for a known model with no provider connected now (an agent restarting), s. */
export const RECONNECT_RETRY_AFTER_SECONDS = 1;

/**
 * Admission control refused the request (queue full, or no slot within `maxWaitMs`): 429
 * `rate_limited` with `Retry-After`. Dialects render overload differently (Anthropic: 529
 * `overloaded_error`), so the edge maps it per dialect (`overloadFor`).
 */
export class PoolOverloadedError extends IopError {
  constructor(message: string, retryAfterSeconds: number | undefined) {
    super('rate_limited', message, retryAfterSeconds === undefined ? {} : { retryAfterSeconds });
  }
}

/** Rejects the queued waiters of a group a reload removed; `acquire` resolves the request again. */
class GroupRemovedError extends Error {}

/** A validated pool config with everything a reload needs built, not yet in service (`ProviderPool.prepareReload`). */
export interface PreparedPoolReload {
  readonly config: PoolConfig;
  readonly changes: PoolConfigChanges;
  /** The config it was prepared against (a reload prepared against an older one is refused). */
  readonly base: PoolConfig;
  readonly resolver: ModelResolver;
  readonly retry: RetryPolicy;
  /** Direct providers after the reload: kept instances and new ones (added or changed). */
  readonly direct: readonly DirectProvider[];
  /** Kept instances are not recreated; these are the new ones (closed again when discarded). */
  readonly created: readonly DirectProvider[];
}

export interface ProviderPoolOptions {
  config: PoolConfig;
  registry: AgentRegistry;
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

/** A provider chosen for a request and the served model id it will run. */
export interface PoolPick {
  provider: PoolProvider;
  /** Served model id (the target's `model`). */
  model: string;
}

export interface AcquireOptions {
  /** Provider ids to avoid (already tried); ignored when only they could serve. */
  exclude?: ReadonlySet<string>;
  /** Prefix-affinity key (see `affinityKey`); routes by consistent hashing when set. */
  affinityKey?: number | undefined;
  signal?: AbortSignal;
}

export interface AcquiredRun {
  run: RunStream;
  pick: PoolPick;
  /** The group that serves it (a fallback group when the first had no room). */
  group: ModelGroup;
  ticket: OutlierTicket;
}

export class ProviderPool {
  readonly queue = new AdmissionQueue();
  readonly metrics: PoolMetrics;
  private poolConfig: PoolConfig;
  private modelResolver: ModelResolver;
  private retryPolicy: RetryPolicy;
  private directProviders: readonly DirectProvider[];
  /** Direct providers a reload removed or replaced, finishing their runs in flight. */
  private readonly retiring = new Set<DirectProvider>();
  private readonly picker: P2cPicker;
  private readonly states = new Map<string, PoolGroupState>();
  private readonly random: Random;
  private readonly now: Clock;
  private readonly timer: NodeJS.Timeout;
  /** Served model names registered since the edge started (bounded), see `knows`. */
  private readonly servedNames = new ServedNames();
  /** Until this time (ms) every name counts as known (`startupGraceMs`). */
  private readonly graceUntilMs: number;

  constructor(private readonly options: ProviderPoolOptions) {
    this.now = options.now ?? Date.now;
    this.graceUntilMs = this.now() + (options.startupGraceMs ?? 0);
    this.random = options.random ?? Math.random;
    this.poolConfig = options.config;
    this.modelResolver = new ModelResolver(options.config);
    this.retryPolicy = new RetryPolicy(options.config.retry, { now: this.now, random: this.random });
    this.picker = new P2cPicker({ random: this.random });
    this.metrics = new PoolMetrics(options.metrics, () => this.queue.stats().queued);
    this.directProviders = options.config.directProviders.map((config) => new DirectProvider(config, () => this.notifyAll()));
    for (const provider of this.directProviders) for (const model of provider.servedModels) this.servedNames.add(model);
    for (const session of options.registry.all()) for (const model of session.models) this.servedNames.add(model.id);
    options.registry.onChange = (session, change) => {
      if (change === 'removed') for (const state of this.states.values()) state.outliers.remove(session.agentId);
      else for (const model of session.models) this.servedNames.add(model.id);
      this.notifyAll();
    };
    options.runs.onRunFinished = (handle) => {
      endRunSpans(handle.runId, false);
      this.notifyAll();
    };
    this.timer = setInterval(() => this.notifyAll(), NOTIFY_INTERVAL_MS);
    this.timer.unref();
  }

  /** The pool config in service (replaced whole by a reload). */
  get config(): PoolConfig {
    return this.poolConfig;
  }

  /** Client model names → groups, for the config in service. */
  get resolver(): ModelResolver {
    return this.modelResolver;
  }

  get retry(): RetryPolicy {
    return this.retryPolicy;
  }

  /** The direct providers in service (not those a reload retired). */
  get direct(): readonly DirectProvider[] {
    return this.directProviders;
  }

  /** The agent registry (connected agents), for listings. */
  get agents(): AgentRegistry {
    return this.options.registry;
  }

  /** The group serving a client's model name (configured group or alias, else implicit). */
  resolve(name: string): ModelGroup {
    const resolved = this.resolver.resolveModel(name);
    if (!resolved.implicit) return this.stateOf(resolved.group).group;
    // State for an unknown name only once something serves it: random names cost no memory.
    const known = this.states.get(name);
    if (known !== undefined) return known.group;
    return this.candidates(resolved.group).size > 0 ? this.stateOf(resolved.group).group : resolved.group;
  }

  /** The configured group called `name`, if any. */
  group(name: string): ModelGroup | undefined {
    const group = this.resolver.group(name);
    return group === undefined ? undefined : this.stateOf(group).group;
  }

  /** Every provider that serves one of the group's targets, with the target it serves. */
  candidates(group: ModelGroup): Map<PoolProvider, ModelTarget> {
    const out = new Map<PoolProvider, ModelTarget>();
    for (const target of group.targets) {
      const labels = target.agents?.labels;
      for (const session of this.options.registry.forModel(target.model)) {
        if (!out.has(session) && hasLabels(session, labels)) out.set(session, target);
      }
      for (const provider of this.directProviders) {
        if (!out.has(provider) && provider.serves(target.model) && hasLabels(provider, labels)) out.set(provider, target);
      }
    }
    return out;
  }

  /** Largest context length any provider reports for the served model `model`, tokens (0 = unknown). */
  contextLength(model: string): number {
    let length = 0;
    for (const session of this.options.registry.forModel(model)) length = Math.max(length, session.contextLength(model) ?? 0);
    return length;
  }

  /** The tool-call id format the served model `model` needs (`alnum9` when any target says so). */
  toolIdFormatOf(model: string): 'any' | 'alnum9' {
    for (const group of this.poolConfig.modelGroups) {
      for (const target of group.targets) if (target.model === model && target.toolIdFormat === 'alnum9') return 'alnum9';
    }
    return 'any';
  }

  /** Whether a group (by client name) has a target whose backend restricts tool-call ids. */
  restrictsToolIds(name: string): boolean {
    return this.resolve(name).targets.some((target) => target.toolIdFormat === 'alnum9');
  }

  /**
   * Whether `name` is a model the edge knows although nothing may serve it now: a configured
   * group or alias, or a served model name some provider (agent or direct) has served since the
   * edge started (the 4096 most recent, `ServedNames`).
   */
  knows(name: string): boolean {
    return !this.resolver.resolveModel(name).implicit || this.servedNames.has(name);
  }

  /**
   * Whether some provider of the group or of its fallbacks takes requests at all (it may be busy,
   * so the request may queue): false when every one is ejected as an outlier, draining or gone.
   */
  accepting(group: ModelGroup): boolean {
    group = this.current(group);
    return this.anyAccepting([group, ...group.fallbacks.map((name) => this.group(name)).filter((g) => g !== undefined)]);
  }

  /** Whether some provider of the groups takes requests at all (it may be busy): queueing can succeed. */
  private anyAccepting(groups: readonly ModelGroup[]): boolean {
    for (const group of groups) {
      const state = this.stateOf(group);
      for (const provider of this.candidates(group).keys()) if (provider.accepting && state.outliers.allows(provider.id)) return true;
    }
    return false;
  }

  /** Whether some provider of the group, other than `exclude`, could take a request now. */
  canRoute(group: ModelGroup, exclude?: ReadonlySet<string>): boolean {
    return this.pick(group, { exclude }) !== undefined;
  }

  /** Chooses a provider (no side effect); undefined when none is eligible now. */
  pick(group: ModelGroup, options: AcquireOptions = {}): PoolPick | undefined {
    group = this.current(group);
    const candidates = this.candidates(group);
    if (candidates.size === 0) return undefined;
    const state = this.stateOf(group);
    for (const provider of candidates.keys()) state.outliers.add(provider.id);
    const pickOptions: PickOptions = { exclude: options.exclude, allow: (provider) => state.outliers.allows(provider.id) };
    let providers = [...candidates.keys()];
    const affinity = this.poolConfig.affinity;
    let chosen: PoolProvider | undefined;
    if (options.affinityKey !== undefined && affinity.enabled) {
      chosen = state.affinity.pick(options.affinityKey, providers, pickOptions);
    } else {
      if (group.targets.length > 1) providers = this.drawTarget(group, providers, candidates, pickOptions);
      chosen = this.picker.pick(providers, pickOptions);
    }
    return chosen === undefined ? undefined : { provider: chosen, model: candidates.get(chosen)!.model };
  }

  /**
   * Picks a provider and starts the run (`start`) at once, or waits in the group's queue.
   * @throws IopError when no provider serves the group or its fallbacks now: 503 `no_capacity`
   *   with `Retry-After: 1` when the name is known (`knows`: a configured group or alias, or a
   *   served model name some provider has served since the edge started: its agent is restarting,
   *   and SDKs retry a 503, never a 404; Anthropic clients get 529 `overloaded_error`), or when
   *   this is a retry (`exclude` non-empty); else 404 `model_not_found`. 503 `no_capacity` when
   *   every provider is draining or ejected; `rate_limited` (429, `Retry-After`) when the queue is
   *   full or the wait runs out; the signal's reason when it aborts.
   */
  /**
   * The error for a name no connected provider serves: 503 `no_capacity` (Retry-After) when the
   * name is configured or was served since start (its agents are only reconnecting), or while the
   * edge is within `startupGraceMs` of its start (agents reconnecting after an edge restart), else
   * 404 `model_not_found`.
   */
  noProviderError(name: string): IopError {
    if (this.now() < this.graceUntilMs && !this.knows(name)) {
      return new IopError('no_capacity', `the edge has just started and its agents are still connecting; retry shortly (no provider of \`${excerpt(name)}\` yet)`, { retryAfterSeconds: RECONNECT_RETRY_AFTER_SECONDS });
    }
    if (this.knows(name)) return new IopError('no_capacity', `no provider of \`${excerpt(name)}\` is connected now; retry shortly`, { retryAfterSeconds: RECONNECT_RETRY_AFTER_SECONDS });
    return new IopError('model_not_found', `The model \`${excerpt(name)}\` does not exist or no provider serves it`, { param: 'model' });
  }

  async acquire(group: ModelGroup, options: AcquireOptions, start: (pick: PoolPick) => RunStream): Promise<AcquiredRun> {
    group = this.current(group);
    const served = this.servingGroup(group);
    if (served === undefined) {
      // On a retry the model did exist a moment ago (its last provider just went away), and a
      // configured or once-served name is only missing its providers (an agent restarting): that
      // is a capacity problem the client may retry, not an unknown model.
      if (options.exclude !== undefined && options.exclude.size > 0) {
        throw new IopError('no_capacity', `no provider of \`${excerpt(group.name)}\` is connected any more`, { retryAfterSeconds: RECONNECT_RETRY_AFTER_SECONDS });
      }
      throw this.noProviderError(group.name);
    }
    const attemptTrace = new AttemptTrace(served.name);
    const tryAcquire = (): AcquiredRun | undefined => {
      // A waiter may outlive a reload: it routes by the group as configured now.
      const head = this.current(served);
      for (const candidate of [head, ...head.fallbacks.map((name) => this.group(name)).filter((g) => g !== undefined)]) {
        const pick = this.pick(candidate, options) ?? (options.exclude !== undefined && options.exclude.size > 0 ? this.pick(candidate, { ...options, exclude: undefined }) : undefined);
        if (pick === undefined) continue;
        const ticket = this.stateOf(candidate).outliers.onStart(pick.provider.id);
        return { run: attemptTrace.started(pick.provider, pick.model, () => start(pick)), pick, group: candidate, ticket };
      }
      return undefined;
    };
    if (!this.anyAccepting([served, ...served.fallbacks.map((name) => this.group(name)).filter((g) => g !== undefined)])) {
      // Every provider is draining, gone or ejected: waiting in the queue would only delay the answer.
      throw new IopError('no_capacity', `no provider of \`${excerpt(group.name)}\` is taking requests (draining or unhealthy)`, { retryAfterSeconds: 1 });
    }
    try {
      const queuedAt = performance.now();
      const acquired = await this.queue.acquire(served.name, served.queue, tryAcquire, options.signal);
      this.metrics.queueWait.observe({ group: served.name }, (performance.now() - queuedAt) / 1000);
      if (options.affinityKey !== undefined && this.poolConfig.affinity.enabled && (options.exclude === undefined || options.exclude.size === 0)) {
        const hit = this.stateOf(acquired.group).affinity.observe(options.affinityKey, acquired.pick.provider.id);
        if (hit !== 'new') this.metrics.affinityHits.inc({ group: acquired.group.name, result: hit });
      }
      return acquired;
    } catch (error) {
      attemptTrace.failed(error);
      // The group it waited for was removed by a reload: resolve the request again by its name.
      if (error instanceof GroupRemovedError) return this.acquire(group, options, start);
      if (error instanceof IopError && error.code === 'rate_limited') {
        this.metrics.queueRejections.inc({ group: served.name, reason: error.message.includes('is full') ? 'full' : 'timeout' });
        throw new PoolOverloadedError(error.message, error.retryAfterSeconds);
      }
      throw error;
    }
  }

  /** Records an attempt's verdict for the outlier detector of `group`. */
  report(group: ModelGroup, ticket: OutlierTicket, outcome: AttemptOutcome): void {
    this.metrics.attempts.inc({ group: group.name, provider: ticket.providerId, outcome });
    // A group a reload removed has no state any more: its verdicts are dropped.
    this.states.get(group.name)?.outliers.onResult(ticket, outcome);
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
    const config = parsePoolConfig(next);
    const current = new Map(this.directProviders.map((provider) => [provider.id, provider]));
    const changes = diffPoolConfig(this.poolConfig, config);
    const replaced = new Set([...changes.directChanged, ...changes.directAdded]);
    const created: DirectProvider[] = [];
    try {
      const retry = new RetryPolicy(config.retry, { now: this.now, random: this.random, budget: this.retryPolicy.budget });
      const direct = config.directProviders.map((provider) => {
        const kept = current.get(provider.id);
        if (kept !== undefined && !replaced.has(provider.id)) return kept;
        const made = new DirectProvider(provider, () => this.notifyAll());
        created.push(made);
        return made;
      });
      return { config, changes, base: this.poolConfig, resolver: new ModelResolver(config), retry, direct, created };
    } catch (error) {
      for (const provider of created) void provider.close();
      throw error;
    }
  }

  /** Closes the direct providers a prepared reload created; for a reload that will not be applied. */
  discardReload(prepared: PreparedPoolReload): void {
    for (const provider of prepared.created) void provider.close();
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
    if (prepared.base !== this.poolConfig) throw new Error('pool reload prepared against a config no longer in service');
    const { config, changes } = prepared;
    const forgotten = [...changes.directRemoved, ...changes.directChanged];
    const kept = new Set(prepared.direct);
    for (const provider of this.directProviders) {
      if (kept.has(provider)) continue;
      this.retiring.add(provider);
      void provider.retire().finally(() => this.retiring.delete(provider));
    }
    const loadFactorChanged = config.affinity.loadFactor !== this.poolConfig.affinity.loadFactor;
    this.poolConfig = config;
    this.modelResolver = prepared.resolver;
    this.retryPolicy = prepared.retry;
    this.retryPolicy.budget.configure(config.retry);
    this.directProviders = prepared.direct;
    for (const provider of prepared.created) for (const model of provider.servedModels) this.servedNames.add(model);
    const removed: string[] = [];
    for (const [name, state] of this.states) {
      const resolved = this.modelResolver.resolveModel(name);
      const configured = !resolved.implicit && resolved.group.name === name;
      if (configured || (resolved.implicit && state.implicit)) {
        state.group = resolved.group;
        state.implicit = !configured;
        state.outliers.configure(config.outlier);
        for (const id of forgotten) this.forgetProvider(name, state, id);
        if (loadFactorChanged) state.affinity = new PrefixAffinity({ loadFactor: config.affinity.loadFactor });
        continue;
      }
      for (const entry of state.outliers.snapshot()) this.metrics.ejected.remove({ group: name, provider: entry.providerId });
      this.states.delete(name);
      removed.push(name);
    }
    for (const name of removed) this.queue.rejectAll(name, new GroupRemovedError(name));
    this.notifyAll();
    return changes;
  }

  snapshot(): PoolSnapshot {
    for (const group of this.poolConfig.modelGroups) this.stateOf(group);
    const groups = [...this.states.values()].map((state) => groupSnapshot(state, (group) => this.candidates(group), this.queue.size(state.group.name)));
    const { rejectedFull, rejectedTimeout } = this.queue.stats();
    return { groups, retryBudget: this.retry.budget.snapshot(), queue: { rejectedFull, rejectedTimeout } };
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await Promise.all([...this.directProviders, ...this.retiring].map((provider) => provider.close()));
  }

  /**
   * The group as configured now: `group` itself while it is in service, else its name resolved
   * again (a reload replaced or removed it; requests and waiters may hold the old object).
   */
  private current(group: ModelGroup): ModelGroup {
    return this.states.get(group.name)?.group === group ? group : this.resolve(group.name);
  }

  /** The group itself when it has providers, else its first fallback that has; undefined when none. */
  private servingGroup(group: ModelGroup): ModelGroup | undefined {
    if (this.candidates(group).size > 0) return group;
    for (const name of group.fallbacks) {
      const fallback = this.group(name);
      if (fallback !== undefined && this.candidates(fallback).size > 0) return fallback;
    }
    return undefined;
  }

  /** Providers of one target, drawn by target weight among targets with an eligible provider. */
  private drawTarget(group: ModelGroup, providers: PoolProvider[], candidates: Map<PoolProvider, ModelTarget>, options: PickOptions): PoolProvider[] {
    const open = group.targets.filter((target) => providers.some((provider) => candidates.get(provider) === target && isEligible(provider, options)));
    if (open.length <= 1) return providers;
    let draw = this.random() * open.reduce((sum, target) => sum + target.weight, 0);
    let chosen = open[open.length - 1]!;
    for (const target of open) {
      draw -= target.weight;
      if (draw < 0) {
        chosen = target;
        break;
      }
    }
    return providers.filter((provider) => candidates.get(provider) === chosen);
  }

  private forgetProvider(group: string, state: PoolGroupState, providerId: string): void {
    state.outliers.remove(providerId);
    this.metrics.ejected.remove({ group, provider: providerId });
  }

  private notifyAll(): void {
    for (const group of Object.keys(this.queue.stats().queued)) this.queue.notify(group);
  }

  private stateOf(group: ModelGroup): PoolGroupState {
    let state = this.states.get(group.name);
    if (state === undefined) {
      const name = group.name;
      const implicit = this.resolver.group(name) === undefined;
      state = {
        group,
        implicit,
        outliers: new OutlierDetector(this.poolConfig.outlier, {
          now: this.now,
          onChange: (providerId, outlierState, reason) => {
            this.metrics.ejected.set({ group: name, provider: providerId }, outlierState === 'healthy' ? 0 : 1);
            if (outlierState === 'ejected') this.metrics.ejections.inc({ group: name, provider: providerId });
            const log = outlierState === 'healthy' ? this.options.logger.info.bind(this.options.logger) : this.options.logger.warn.bind(this.options.logger);
            log({ group: name, providerId, state: outlierState, reason }, `provider ${outlierState === 'ejected' ? 'ejected' : outlierState === 'probing' ? 'probing' : 'recovered'}`);
          },
        }),
        affinity: new PrefixAffinity({ loadFactor: this.poolConfig.affinity.loadFactor }),
      };
      this.states.set(name, state);
    }
    return state;
  }
}
