/**
 * A reload of the `pool` config section: `PoolReloader` prepares the new config (validated, new
 * direct providers built, nothing in service) and applies it in one synchronous step; what changes
 * is described as plain data (for the `config reloaded` log line and the tests).
 * `diffPoolConfig(current, next)` compares two validated pool configs:
 *
 * - groups by name: added, removed, changed (targets, weights, labels, fallbacks, contextFallback,
 *   queue or gate differ; a change of aliases only is reported under `aliasesAdded/Removed`);
 * - client-facing aliases: added and removed (an alias moved to another group is in neither list
 *   but its new group is `changed`);
 * - direct providers by id: added, removed, changed (any field differs: the provider is replaced,
 *   see `ProviderPool.applyReload`);
 * - pool-wide settings whose value changed: `queue` (the default queue of models served without a
 *   group), `retry`, `outlier`, `affinity`.
 *
 * The pool's entry points are `ProviderPool.prepareReload` + `applyReload` (which also swap the
 * retry policy and serve the queue).
 */
import type { AdmissionQueue } from './admission-queue.js';
import type { DirectProvider } from './direct-provider.js';
import type { ModelCatalog } from './model-catalog.js';
import { ModelResolver } from './model-resolver.js';
import { parsePoolConfig, type DirectProviderConfig, type ModelGroup, type PoolConfig } from './pool-config.js';
import { RetryPolicy } from './retry-policy.js';
import type { RetryBudget } from './retry-budget.js';
import type { Clock, Random } from './provider.js';
import type { Router } from './router.js';

export type PoolSetting = 'queue' | 'retry' | 'outlier' | 'affinity';

export interface PoolConfigChanges {
  groupsAdded: string[];
  groupsRemoved: string[];
  groupsChanged: string[];
  aliasesAdded: string[];
  aliasesRemoved: string[];
  directAdded: string[];
  directRemoved: string[];
  directChanged: string[];
  settings: PoolSetting[];
}

/**
 * Deep equality of JSON data (config values). Unlike `util.isDeepStrictEqual` it ignores
 * prototypes, so values built in different realms (a `vm` context, `structuredClone`) compare
 * by content.
 */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (
    typeof a !== 'object' ||
    typeof b !== 'object' ||
    a === null ||
    b === null ||
    Array.isArray(a) !== Array.isArray(b)
  )
    return false;
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  const keys = Object.keys(left);
  if (keys.length !== Object.keys(right).length) return false;
  return keys.every((key) => Object.hasOwn(right, key) && jsonEqual(left[key], right[key]));
}

const SETTINGS: readonly PoolSetting[] = ['queue', 'retry', 'outlier', 'affinity'];

function byKey<T>(items: readonly T[], key: (item: T) => string): Map<string, T> {
  return new Map(items.map((item) => [key(item), item]));
}

/** The group without its aliases (alias changes are reported apart). */
function body(group: ModelGroup): Omit<ModelGroup, 'aliases'> {
  const { aliases: _aliases, ...rest } = group;
  return rest;
}

function added<T>(from: ReadonlyMap<string, T>, to: ReadonlyMap<string, T>): string[] {
  return [...to.keys()].filter((key) => !from.has(key));
}

/** Compares two validated pool configs (see the module docstring for what each list holds). */
export function diffPoolConfig(current: PoolConfig, next: PoolConfig): PoolConfigChanges {
  const groupsBefore = byKey(current.modelGroups, (group) => group.name);
  const groupsAfter = byKey(next.modelGroups, (group) => group.name);
  const aliasesBefore = new Set(current.modelGroups.flatMap((group) => group.aliases));
  const aliasesAfter = new Set(next.modelGroups.flatMap((group) => group.aliases));
  const directBefore = byKey<DirectProviderConfig>(current.directProviders, (provider) => provider.id);
  const directAfter = byKey<DirectProviderConfig>(next.directProviders, (provider) => provider.id);
  const movedAliasTargets = new Set<string>();
  for (const group of next.modelGroups) {
    for (const alias of group.aliases) {
      const before = current.modelGroups.find((candidate) => candidate.aliases.includes(alias));
      if (before !== undefined && before.name !== group.name) movedAliasTargets.add(group.name);
    }
  }
  return {
    groupsAdded: added(groupsBefore, groupsAfter),
    groupsRemoved: added(groupsAfter, groupsBefore),
    groupsChanged: [...groupsAfter]
      .filter(([name, group]) => {
        const before = groupsBefore.get(name);
        return before !== undefined && (!jsonEqual(body(before), body(group)) || movedAliasTargets.has(name));
      })
      .map(([name]) => name),
    aliasesAdded: [...aliasesAfter].filter((alias) => !aliasesBefore.has(alias)),
    aliasesRemoved: [...aliasesBefore].filter((alias) => !aliasesAfter.has(alias)),
    directAdded: added(directBefore, directAfter),
    directRemoved: added(directAfter, directBefore),
    directChanged: [...directAfter]
      .filter(([id, provider]) => directBefore.has(id) && !jsonEqual(directBefore.get(id), provider))
      .map(([id]) => id),
    settings: SETTINGS.filter((setting) => !jsonEqual(current[setting], next[setting])),
  };
}

/** The non-empty lists of `changes` only (for a compact log line). */
export function compactChanges(changes: PoolConfigChanges): Partial<PoolConfigChanges> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(changes)) if ((value as unknown[]).length > 0) out[key] = value;
  return out as Partial<PoolConfigChanges>;
}

/** Rejects the queued waiters of a group a reload removed; `ProviderPool.acquire` resolves the request again. */
export class GroupRemovedError extends Error {}

/** A validated pool config with everything a reload needs built, not yet in service (`PoolReloader.prepare`). */
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

export interface PoolReloaderOptions {
  catalog: ModelCatalog;
  router: Router;
  queue: AdmissionQueue;
  /** Builds a direct provider for the pool (its ended runs serve the queue). */
  makeDirect: (config: DirectProviderConfig) => DirectProvider;
  now: Clock;
  random: Random;
}

export class PoolReloader {
  /** Direct providers a reload removed or replaced, finishing their runs in flight. */
  private readonly retiring = new Set<DirectProvider>();

  constructor(private readonly options: PoolReloaderOptions) {}

  /**
   * Builds what `next` needs (resolver, retry policy sharing `budget`, new direct providers)
   * without putting anything in service. Direct providers whose config is unchanged are kept (same
   * instance, same load and outlier state).
   * @throws ConfigError when `next` is invalid (see `parsePoolConfig`): nothing has changed then.
   */
  prepare(next: PoolConfig, budget: RetryBudget): PreparedPoolReload {
    const { catalog } = this.options;
    const config = parsePoolConfig(next);
    const current = new Map(catalog.direct.map((provider) => [provider.id, provider]));
    const changes = diffPoolConfig(catalog.config, config);
    const replaced = new Set([...changes.directChanged, ...changes.directAdded]);
    const created: DirectProvider[] = [];
    try {
      const retry = new RetryPolicy(config.retry, { now: this.options.now, random: this.options.random, budget });
      const direct = config.directProviders.map((provider) => {
        const kept = current.get(provider.id);
        if (kept !== undefined && !replaced.has(provider.id)) return kept;
        const made = this.options.makeDirect(provider);
        created.push(made);
        return made;
      });
      return { config, changes, base: catalog.config, resolver: new ModelResolver(config), retry, direct, created };
    } catch (error) {
      for (const provider of created) void provider.close();
      throw error;
    }
  }

  /** Closes the direct providers a prepared reload created; for a reload that will not be applied. */
  discard(prepared: PreparedPoolReload): void {
    for (const provider of prepared.created) void provider.close();
  }

  /**
   * Puts a prepared config in the catalog and the router in one synchronous step (see
   * `ProviderPool.applyReload` for what happens to runs, groups and waiters).
   * @throws Error when `prepared` was built against another config than the one in service.
   */
  apply(prepared: PreparedPoolReload): PoolConfigChanges {
    const { catalog, router, queue } = this.options;
    if (prepared.base !== catalog.config) throw new Error('pool reload prepared against a config no longer in service');
    const { config, changes } = prepared;
    const kept = new Set(prepared.direct);
    for (const provider of catalog.direct) {
      if (kept.has(provider)) continue;
      this.retiring.add(provider);
      void provider.retire().finally(() => this.retiring.delete(provider));
    }
    const loadFactorChanged = config.affinity.loadFactor !== catalog.config.affinity.loadFactor;
    catalog.replace(config, prepared.resolver, prepared.direct);
    const removed = router.reconfigure(config, [...changes.directRemoved, ...changes.directChanged], loadFactorChanged);
    for (const name of removed) queue.rejectAll(name, new GroupRemovedError(name));
    return changes;
  }

  /** Closes the retiring direct providers now (runs in flight are aborted). */
  async close(): Promise<void> {
    await Promise.all([...this.retiring].map((provider) => provider.close()));
  }
}
