/**
 * Name resolution: a client's `model` to its model group of the pool config (by name or alias), or to an implicit
 * one-target group for a model served under its own name.
 */
import type { ModelGroup, ModelTarget, PoolConfig } from './pool-config.js';

export interface ResolvedModel {
  /** The configured group, or an implicit one-target group for a model served under its own name. */
  group: ModelGroup;
  targets: readonly ModelTarget[];
  /** True when `name` matched no group or alias. */
  implicit: boolean;
}

/** Maps client model names to model groups (by name or alias). */
export class ModelResolver {
  private readonly byName = new Map<string, ModelGroup>();

  constructor(private readonly config: PoolConfig) {
    for (const group of config.modelGroups) {
      this.byName.set(group.name, group);
      for (const alias of group.aliases) this.byName.set(alias, group);
    }
  }

  /**
   * The group a client's `model` names. Unknown names fall through to the served model of the same
   * name (an implicit group with the default queue, no fallbacks); whether anything serves it is
   * the router's question (404 `model_not_found` when nothing does).
   */
  resolveModel(name: string): ResolvedModel {
    const group = this.byName.get(name);
    if (group !== undefined) return { group, targets: group.targets, implicit: false };
    const implicit: ModelGroup = {
      name,
      aliases: [],
      targets: [{ model: name, weight: 1 }],
      fallbacks: [],
      queue: this.config.queue,
    };
    return { group: implicit, targets: implicit.targets, implicit: true };
  }

  /** The configured group called `name` (not an alias), if any. */
  group(name: string): ModelGroup | undefined {
    const group = this.byName.get(name);
    return group?.name === name ? group : undefined;
  }

  /** Client-facing names (group names and aliases), for `GET /v1/models`. */
  names(): string[] {
    return [...this.byName.keys()];
  }
}
