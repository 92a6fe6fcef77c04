/**
 * The candidates of one request: for each group it looks at (the group asked for, its fallbacks),
 * the providers serving one of the group's targets with the target each serves. Built lazily, at
 * most once per group, from the catalog (`ModelCatalog.candidates`), and reused by every step of
 * the request's routing (which group serves, whether any provider accepts, the pick itself).
 *
 * A snapshot is `current` while the catalog's `version` is the one it was built at; a request that
 * waited in the queue while agents joined or left, or a reload happened, takes a new one.
 */
import type { ModelCatalog } from './model-catalog.js';
import type { ModelGroup, ModelTarget } from './pool-config.js';
import type { PoolProvider } from './provider.js';

export interface GroupCandidates {
  readonly group: ModelGroup;
  /** Each provider with the target it serves for this group. */
  readonly targets: ReadonlyMap<PoolProvider, ModelTarget>;
  /** The keys of `targets`, in order. */
  readonly providers: readonly PoolProvider[];
}

export class CandidateSnapshot {
  /** The catalog version it was built at. */
  readonly version: number;
  private readonly byGroup = new Map<ModelGroup, GroupCandidates>();

  constructor(private readonly catalog: ModelCatalog) {
    this.version = catalog.version;
  }

  /** Whether the catalog has not changed since (its candidates are still the ones in service). */
  get current(): boolean {
    return this.version === this.catalog.version;
  }

  /** The candidates of `group` (built on first use). */
  of(group: ModelGroup): GroupCandidates {
    let entry = this.byGroup.get(group);
    if (entry === undefined) {
      const targets = this.catalog.candidates(group);
      entry = { group, targets, providers: [...targets.keys()] };
      this.byGroup.set(group, entry);
    }
    return entry;
  }
}
