/**
 * The pool's router: where a request goes among the candidates of its group (`CandidateSnapshot`).
 * It owns each group's runtime state (`PoolGroupState`: the outlier detector and the prefix-
 * affinity ring) and picks:
 *
 * - cache-aware (resident-pick.ts) when the request has prefix keys (some connected agent reports
 *   its KV cache, residency-index.ts): the candidate with the lowest expected time to first token
 *   (its uncached prompt tokens and the prefill work already sent to it, prefill-ledger.ts); else
 * - prefix affinity (consistent hashing with bounded load) when the request has an affinity key
 *   and affinity is enabled, else power of two choices on live load (`P2cPicker`), or round robin
 *   (`pool.balancer`, a baseline); targets are drawn by weight first when a group has several;
 * - always among providers the group's outlier detector allows and not in `exclude`.
 *
 * Group identity: `resolve(name)` returns the group object in service for a name (the state's),
 * and `current(group)` maps a group a request or waiter holds to the one in service after a reload.
 * State for an implicit group (a served model under its own name) is made only once something
 * serves it, so random names cost no memory.
 */
import type { Logger } from '../logger.js';
import type { CandidateSnapshot, GroupCandidates } from './candidate-snapshot.js';
import type { ModelCatalog } from './model-catalog.js';
import { OutlierDetector, type AttemptOutcome, type OutlierListener, type OutlierTicket } from './outlier-detector.js';
import { P2cPicker, RoundRobinPicker, isEligible, type PickOptions } from './p2c.js';
import type { ModelGroup, ModelTarget, PoolConfig } from './pool-config.js';
import type { PoolMetrics } from './pool-metrics.js';
import type { PoolGroupState } from './pool-snapshot.js';
import { PrefixAffinity } from './prefix-affinity.js';
import type { PrefixKeys } from './prefix-keys.js';
import { PrefillLedger, TokenRatio } from './prefill-ledger.js';
import { pickResident } from './resident-pick.js';
import type { ResidencyIndex } from './residency-index.js';
import type { Clock, PoolProvider, Random } from './provider.js';

/** A provider chosen for a request and the served model id it will run. */
export interface PoolPick {
  provider: PoolProvider;
  /** Served model id (the target's `model`). */
  model: string;
  /** The prefill time the cache-aware pick expects of it, ms (charged to its queue when the run starts). */
  prefillMs?: number;
}

export interface RouteOptions {
  /** Provider ids to avoid (already tried). */
  exclude?: ReadonlySet<string> | undefined;
  /** Prefix-affinity key (see `affinityKey`); routes by consistent hashing when set. */
  affinityKey?: number | undefined;
  /** The request's prefix keys (prefix-keys.ts): routes to where the longest is cached, when an agent reports it. */
  prefixKeys?: PrefixKeys | undefined;
}

export interface RouterOptions {
  /** What agents report their KV caches hold. */
  residency: ResidencyIndex;
  catalog: ModelCatalog;
  metrics: PoolMetrics;
  logger: Logger;
  now: Clock;
  random: Random;
}

export class Router {
  private readonly states = new Map<string, PoolGroupState>();
  private readonly picker: P2cPicker;
  private readonly roundRobin = new RoundRobinPicker();
  /** The prefill work sent to each provider and not done yet, as the cache-aware pick estimates it. */
  private readonly prefill: PrefillLedger;
  private readonly tokenRatio = new TokenRatio();
  /** The last cache-aware pick, charged by `started` when its run starts (`pick` has no side effect). */
  private lastPick: PoolPick | undefined;

  constructor(private readonly options: RouterOptions) {
    this.picker = new P2cPicker({ random: options.random });
    this.prefill = new PrefillLedger(options.now);
  }

  /** The group serving a client's model name (configured group or alias, else implicit). */
  resolve(name: string): ModelGroup {
    const resolved = this.options.catalog.resolver.resolveModel(name);
    if (!resolved.implicit) return this.stateOf(resolved.group).group;
    const known = this.states.get(name);
    if (known !== undefined) return known.group;
    return this.options.catalog.candidates(resolved.group).size > 0
      ? this.stateOf(resolved.group).group
      : resolved.group;
  }

  /** The configured group called `name`, if any. */
  group(name: string): ModelGroup | undefined {
    const group = this.options.catalog.resolver.group(name);
    return group === undefined ? undefined : this.stateOf(group).group;
  }

  /**
   * The group as configured now: `group` itself while it is in service, else its name resolved
   * again (a reload replaced or removed it; requests and waiters may hold the old object).
   */
  current(group: ModelGroup): ModelGroup {
    return this.states.get(group.name)?.group === group ? group : this.resolve(group.name);
  }

  /** The group itself when it has providers, else its first fallback that has; undefined when none. */
  servingGroup(group: ModelGroup, snapshot: CandidateSnapshot): ModelGroup | undefined {
    if (snapshot.of(group).providers.length > 0) return group;
    for (const name of group.fallbacks) {
      const fallback = this.group(name);
      if (fallback !== undefined && snapshot.of(fallback).providers.length > 0) return fallback;
    }
    return undefined;
  }

  /**
   * Whether some provider of `group` or of its fallbacks takes requests at all (it may be busy, so
   * the request may queue): false when every one is ejected as an outlier, draining or gone.
   */
  anyAccepting(group: ModelGroup, snapshot: CandidateSnapshot): boolean {
    if (this.accepts(snapshot.of(group))) return true;
    for (const name of group.fallbacks) {
      const fallback = this.group(name);
      if (fallback !== undefined && this.accepts(snapshot.of(fallback))) return true;
    }
    return false;
  }

  /** Chooses a provider of `group` (no side effect but outlier bookkeeping); undefined when none is eligible now. */
  pick(group: ModelGroup, snapshot: CandidateSnapshot, options: RouteOptions): PoolPick | undefined {
    const candidates = snapshot.of(group);
    if (candidates.providers.length === 0) return undefined;
    const state = this.stateOf(group);
    for (const provider of candidates.providers) state.outliers.add(provider.id);
    const pickOptions: PickOptions = {
      exclude: options.exclude,
      allow: (provider) => state.outliers.allows(provider.id),
    };
    this.lastPick = undefined;
    let chosen: PoolProvider | undefined;
    if (options.prefixKeys !== undefined) {
      const { affinity } = this.options.catalog.config;
      const now = this.options.now();
      const resident = pickResident(options.prefixKeys, candidates.providers, this.options.residency, {
        loadFactor: affinity.loadFactor,
        prefillTokensPerS: affinity.prefillTokensPerS,
        tokensPerChar: this.tokenRatio.value,
        backlogMs: (provider) => this.prefill.backlogMs(provider.id, now),
        options: pickOptions,
      });
      if (resident === undefined) return undefined;
      if (resident.sampleChars > 0) this.tokenRatio.observe(resident.sampleTokens, resident.sampleChars);
      this.options.metrics.residencyPicks.inc({
        group: group.name,
        result: resident.cachedTokens > 0 ? 'resident' : 'cold',
      });
      const pick: PoolPick = {
        provider: resident.provider,
        model: candidates.targets.get(resident.provider)!.model,
        prefillMs: resident.prefillMs,
      };
      this.lastPick = pick;
      return pick;
    }
    if (options.affinityKey !== undefined && this.options.catalog.config.affinity.enabled) {
      chosen = state.affinity.pick(options.affinityKey, candidates.providers, pickOptions);
    } else {
      const providers = group.targets.length > 1 ? this.drawTarget(candidates, pickOptions) : candidates.providers;
      chosen =
        this.options.catalog.config.balancer === 'round-robin'
          ? this.roundRobin.pick(providers, pickOptions)
          : this.picker.pick(providers, pickOptions);
    }
    return chosen === undefined ? undefined : { provider: chosen, model: candidates.targets.get(chosen)!.model };
  }

  /**
   * A run started on `providerId` for `group`: the ticket its verdict is reported with. When the
   * last pick (made just before, as `ProviderPool` picks and starts in one step) chose it by expected
   * cost, its prefill time is added to the provider's queue.
   */
  started(group: ModelGroup, providerId: string): OutlierTicket {
    const pick = this.lastPick;
    this.lastPick = undefined;
    if (pick !== undefined && pick.provider.id === providerId && pick.prefillMs !== undefined)
      this.prefill.charge(providerId, pick.prefillMs);
    return this.stateOf(group).outliers.onStart(providerId);
  }

  /** Records which provider served an affinity key: `warm` (same as before), `cold`, or `new`. */
  observeAffinity(group: ModelGroup, key: number, providerId: string): 'warm' | 'cold' | 'new' {
    return this.stateOf(group).affinity.observe(key, providerId);
  }

  /** Records an attempt's verdict for the outlier detector of `group` (dropped for a group a reload removed). */
  report(group: ModelGroup, ticket: OutlierTicket, outcome: AttemptOutcome): void {
    this.states.get(group.name)?.outliers.onResult(ticket, outcome);
  }

  /** An agent left: every group forgets its outlier state. */
  forgetProvider(providerId: string): void {
    this.prefill.forget(providerId);
    for (const state of this.states.values()) state.outliers.remove(providerId);
  }

  /**
   * Follows a reloaded config (already in the catalog): a group that still exists under the same
   * name keeps its state (new outlier settings, the affinity ring rebuilt when `loadFactorChanged`)
   * and forgets the providers in `forgotten`; any other loses its state.
   * @returns the names of the groups whose state was dropped.
   */
  reconfigure(config: PoolConfig, forgotten: readonly string[], loadFactorChanged: boolean): string[] {
    const removed: string[] = [];
    for (const [name, state] of this.states) {
      const resolved = this.options.catalog.resolver.resolveModel(name);
      const configured = !resolved.implicit && resolved.group.name === name;
      if (configured || (resolved.implicit && state.implicit)) {
        state.group = resolved.group;
        state.implicit = !configured;
        state.outliers.configure(config.outlier);
        for (const id of forgotten) {
          state.outliers.remove(id);
          this.options.metrics.ejected.remove({ group: name, provider: id });
        }
        if (loadFactorChanged) state.affinity = new PrefixAffinity({ loadFactor: config.affinity.loadFactor });
        continue;
      }
      for (const entry of state.outliers.snapshot())
        this.options.metrics.ejected.remove({ group: name, provider: entry.providerId });
      this.states.delete(name);
      removed.push(name);
    }
    return removed;
  }

  /** Every group with state: the configured ones first (state made now if missing), then implicit ones in use. */
  groupStates(): PoolGroupState[] {
    for (const group of this.options.catalog.config.modelGroups) this.stateOf(group);
    return [...this.states.values()];
  }

  private accepts(candidates: GroupCandidates): boolean {
    const state = this.stateOf(candidates.group);
    for (const provider of candidates.providers)
      if (provider.accepting && state.outliers.allows(provider.id)) return true;
    return false;
  }

  /** Providers of one target, drawn by target weight among targets with an eligible provider. */
  private drawTarget(candidates: GroupCandidates, options: PickOptions): readonly PoolProvider[] {
    const { group, targets, providers } = candidates;
    const open = group.targets.filter((target) =>
      providers.some((provider) => targets.get(provider) === target && isEligible(provider, options)),
    );
    if (open.length <= 1) return providers;
    let draw = this.options.random() * open.reduce((sum, target) => sum + target.weight, 0);
    let chosen: ModelTarget = open[open.length - 1]!;
    for (const target of open) {
      draw -= target.weight;
      if (draw < 0) {
        chosen = target;
        break;
      }
    }
    return providers.filter((provider) => targets.get(provider) === chosen);
  }

  private stateOf(group: ModelGroup): PoolGroupState {
    let state = this.states.get(group.name);
    if (state === undefined) {
      const config = this.options.catalog.config;
      state = {
        group,
        implicit: this.options.catalog.resolver.group(group.name) === undefined,
        outliers: new OutlierDetector(config.outlier, {
          now: this.options.now,
          onChange: this.outlierListener(group.name),
        }),
        affinity: new PrefixAffinity({ loadFactor: config.affinity.loadFactor }),
      };
      this.states.set(group.name, state);
    }
    return state;
  }

  /** Metrics and a log line for each outlier state change of group `name`. */
  private outlierListener(name: string): OutlierListener {
    const { metrics, logger } = this.options;
    return (providerId, outlierState, reason) => {
      metrics.ejected.set({ group: name, provider: providerId }, outlierState === 'healthy' ? 0 : 1);
      if (outlierState === 'ejected') metrics.ejections.inc({ group: name, provider: providerId });
      const log = outlierState === 'healthy' ? logger.info.bind(logger) : logger.warn.bind(logger);
      log(
        { group: name, providerId, state: outlierState, reason },
        `provider ${outlierState === 'ejected' ? 'ejected' : outlierState === 'probing' ? 'probing' : 'recovered'}`,
      );
    };
  }
}
