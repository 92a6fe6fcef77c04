/**
 * What a reload of the `pool` config section changes, as plain data (for the `config reloaded`
 * log line and the tests). `diffPoolConfig(current, next)` compares two validated pool configs:
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
 * The swap itself is `ProviderPool.prepareReload` + `applyReload`; this module only describes it.
 */
import type { DirectProviderConfig, ModelGroup, PoolConfig } from './pool-config.js';

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
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null || Array.isArray(a) !== Array.isArray(b)) return false;
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
    groupsChanged: [...groupsAfter].filter(([name, group]) => {
      const before = groupsBefore.get(name);
      return before !== undefined && (!jsonEqual(body(before), body(group)) || movedAliasTargets.has(name));
    }).map(([name]) => name),
    aliasesAdded: [...aliasesAfter].filter((alias) => !aliasesBefore.has(alias)),
    aliasesRemoved: [...aliasesBefore].filter((alias) => !aliasesAfter.has(alias)),
    directAdded: added(directBefore, directAfter),
    directRemoved: added(directAfter, directBefore),
    directChanged: [...directAfter].filter(([id, provider]) => directBefore.has(id) && !jsonEqual(directBefore.get(id), provider)).map(([id]) => id),
    settings: SETTINGS.filter((setting) => !jsonEqual(current[setting], next[setting])),
  };
}

/** The non-empty lists of `changes` only (for a compact log line). */
export function compactChanges(changes: PoolConfigChanges): Partial<PoolConfigChanges> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(changes)) if ((value as unknown[]).length > 0) out[key] = value;
  return out as Partial<PoolConfigChanges>;
}
