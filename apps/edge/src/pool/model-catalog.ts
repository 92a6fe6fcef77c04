/**
 * The pool's model catalog: which names exist and who serves them. It holds the pool config in
 * service with its `ModelResolver` (client names → groups), the providers (the connected agents of
 * the `AgentDirectory` and the direct providers in service), the served model names seen since
 * start (`ServedNames`), and answers:
 *
 * - `candidates(group)`: every provider serving one of the group's targets (with its labels), with
 *   the target it serves — the input of routing (`CandidateSnapshot` builds it once per request);
 * - `contextLength(model)`, `toolIdFormatOf(model)`: what the dialects need of a served model;
 * - `knows(name)`, `noProviderError(name)`: whether a name nothing serves now is a 503 or a 404;
 * - `/v1/models` is listed from it (model-list.ts).
 *
 * `version` changes whenever the candidates of some group may have changed (an agent joined or
 * left, a reload swapped the config or the direct providers): a snapshot of an older version is
 * rebuilt.
 */
import { IopError, excerpt } from '@iop/core';
import type { AgentChange, AgentDirectory, PoolAgent } from './agent-directory.js';
import type { DirectProvider } from './direct-provider.js';
import { ModelResolver } from './model-resolver.js';
import type { ModelGroup, ModelTarget, PoolConfig } from './pool-config.js';
import { hasLabels, type Clock, type PoolProvider } from './provider.js';
import { ServedNames } from './served-names.js';

/** `Retry-After` of a 503 for a known model with no provider connected now (an agent restarting), s. */
export const RECONNECT_RETRY_AFTER_SECONDS = 1;

export interface ModelCatalogOptions {
  config: PoolConfig;
  registry: AgentDirectory;
  /** The direct providers of `config`, built. */
  direct: readonly DirectProvider[];
  now: Clock;
  /** For this long after start (ms), a name no connected provider serves is a 503, not a 404. Default 0. */
  startupGraceMs?: number | undefined;
}

export class ModelCatalog {
  private poolConfig: PoolConfig;
  private modelResolver: ModelResolver;
  private directProviders: readonly DirectProvider[];
  private changes = 0;
  /** Served model names registered since the edge started (bounded), see `knows`. */
  private readonly servedNames = new ServedNames();
  /** Until this time (ms) every name counts as known (`startupGraceMs`). */
  private readonly graceUntilMs: number;

  constructor(private readonly options: ModelCatalogOptions) {
    this.poolConfig = options.config;
    this.modelResolver = new ModelResolver(options.config);
    this.directProviders = options.direct;
    this.graceUntilMs = options.now() + (options.startupGraceMs ?? 0);
    for (const provider of this.directProviders) for (const model of provider.servedModels) this.servedNames.add(model);
    for (const session of options.registry.all()) for (const model of session.models) this.servedNames.add(model.id);
  }

  /** The pool config in service (replaced whole by a reload). */
  get config(): PoolConfig {
    return this.poolConfig;
  }

  /** Client model names → groups, for the config in service. */
  get resolver(): ModelResolver {
    return this.modelResolver;
  }

  /** The direct providers in service (not those a reload retired). */
  get direct(): readonly DirectProvider[] {
    return this.directProviders;
  }

  /** The agent registry (connected agents). */
  get agents(): AgentDirectory {
    return this.options.registry;
  }

  /** Changes whenever the candidates of a group may have changed (see the module docstring). */
  get version(): number {
    return this.changes;
  }

  /** An agent joined or left (`AgentDirectory` listener): its served names are remembered. */
  agentChanged(session: PoolAgent, change: AgentChange): void {
    this.changes++;
    if (change === 'added') for (const model of session.models) this.servedNames.add(model.id);
  }

  /** Puts a reloaded config in service with its resolver and direct providers (`PoolReloader`). */
  replace(config: PoolConfig, resolver: ModelResolver, direct: readonly DirectProvider[]): void {
    this.changes++;
    this.poolConfig = config;
    this.modelResolver = resolver;
    this.directProviders = direct;
    for (const provider of direct) for (const model of provider.servedModels) this.servedNames.add(model);
  }

  /** Every provider that serves one of the group's targets, with the target it serves (a new Map). */
  candidates(group: ModelGroup): Map<PoolProvider, ModelTarget> {
    const out = new Map<PoolProvider, ModelTarget>();
    for (const target of group.targets) {
      const labels = target.agents?.labels;
      for (const session of this.options.registry.forModel(target.model)) {
        if (!out.has(session) && hasLabels(session, labels)) out.set(session, target);
      }
      for (const provider of this.directProviders) {
        if (!out.has(provider) && provider.serves(target.model) && hasLabels(provider, labels))
          out.set(provider, target);
      }
    }
    return out;
  }

  /** Largest context length any provider reports for the served model `model`, tokens (0 = unknown). */
  contextLength(model: string): number {
    let length = 0;
    for (const session of this.options.registry.forModel(model))
      length = Math.max(length, session.contextLength(model) ?? 0);
    return length;
  }

  /** The tool-call id format the served model `model` needs (`alnum9` when any target says so). */
  toolIdFormatOf(model: string): 'any' | 'alnum9' {
    for (const group of this.poolConfig.modelGroups) {
      for (const target of group.targets)
        if (target.model === model && target.toolIdFormat === 'alnum9') return 'alnum9';
    }
    return 'any';
  }

  /**
   * Whether `name` is a model the edge knows although nothing may serve it now: a configured
   * group or alias, or a served model name some provider (agent or direct) has served since the
   * edge started (the 4096 most recent, `ServedNames`).
   */
  knows(name: string): boolean {
    return !this.modelResolver.resolveModel(name).implicit || this.servedNames.has(name);
  }

  /**
   * The error for a name no connected provider serves: 503 `no_capacity` (Retry-After) when the
   * name is configured or was served since start (its agents are only reconnecting), or while the
   * edge is within `startupGraceMs` of its start (agents reconnecting after an edge restart), else
   * 404 `model_not_found`.
   */
  noProviderError(name: string): IopError {
    if (this.options.now() < this.graceUntilMs && !this.knows(name)) {
      return new IopError(
        'no_capacity',
        `the edge has just started and its agents are still connecting; retry shortly (no provider of \`${excerpt(name)}\` yet)`,
        { retryAfterSeconds: RECONNECT_RETRY_AFTER_SECONDS },
      );
    }
    if (this.knows(name))
      return new IopError('no_capacity', `no provider of \`${excerpt(name)}\` is connected now; retry shortly`, {
        retryAfterSeconds: RECONNECT_RETRY_AFTER_SECONDS,
      });
    return new IopError('model_not_found', `The model \`${excerpt(name)}\` does not exist or no provider serves it`, {
      param: 'model',
    });
  }
}
