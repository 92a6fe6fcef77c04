/**
 * What every dialect's model list (`GET /v1/models`, Gemini `GET /v1beta/models`) lists: every
 * name a client may send as `model` and get served now, as `ModelListing`s (@iop/core) that each
 * dialect renders in its own shape (`Dialect.modelList`).
 *
 * - Configured model groups, by name and by each alias, when a provider able to take requests
 *   (connected, not draining; agent or direct provider) serves the group or one of its fallbacks.
 * - Served models of connected agents and direct providers that take requests, under their own
 *   name (the implicit groups of `ModelResolver.resolveModel`), unless that name is a configured
 *   group or alias: the name routes to the group then, so only the group decides.
 *
 * Each name appears once: groups first in config order (name, then aliases), then served models in
 * the order agents joined, then direct providers in config order. `contextLength` is the largest
 * an agent reports for the model or the group's targets (null when unknown), `providers` the
 * providers able to serve it now, `apis` the APIs its providers serve it with, as their agents
 * registered them (`chat`, `completions`, `embeddings`, `rerank` for rerank and score; null when
 * no provider tells). Computed on each call, so
 * it follows agents joining and leaving and config reloads at once.
 */
import type { ModelListing } from '@iop/core';
import type { ModelGroup } from './pool-config.js';
import type { ModelCatalog } from './model-catalog.js';
import type { PoolProvider } from './provider.js';

const entry = (
  id: string,
  providers: number,
  contextLength: number,
  apis: ReadonlySet<string> | undefined,
): ModelListing => ({
  id,
  created: 0,
  contextLength: contextLength > 0 ? contextLength : null,
  providers,
  apis: apis === undefined || apis.size === 0 ? null : [...apis].sort(),
});

/** Adds the APIs `provider` serves `model` with to `into` (made when first needed); returns it. */
function addApis(into: Set<string> | undefined, provider: PoolProvider, model: string): Set<string> | undefined {
  const apis = provider.apisOf?.(model);
  if (apis === undefined) return into;
  const set = into ?? new Set<string>();
  for (const api of apis) set.add(api);
  return set;
}

/** Accepting providers of the first group of `group` and its fallbacks that has any, with its context length. */
function serving(
  catalog: ModelCatalog,
  group: ModelGroup,
): { providers: number; contextLength: number; apis: Set<string> | undefined } | undefined {
  for (const candidate of [group, ...group.fallbacks.map((name) => catalog.resolver.group(name))]) {
    if (candidate === undefined) continue;
    let providers = 0;
    let apis: Set<string> | undefined;
    for (const [provider, target] of catalog.candidates(candidate)) {
      if (!provider.accepting) continue;
      providers++;
      apis = addApis(apis, provider, target.model);
    }
    if (providers === 0) continue;
    const contextLength = Math.max(0, ...candidate.targets.map((target) => catalog.contextLength(target.model)));
    return { providers, contextLength, apis };
  }
  return undefined;
}

/** The models a client may send now (see the module docstring). */
export function listModels(catalog: ModelCatalog): ModelListing[] {
  const out: ModelListing[] = [];
  const configured = new Set(catalog.resolver.names());
  for (const group of catalog.config.modelGroups) {
    const served = serving(catalog, group);
    if (served === undefined) continue;
    for (const name of [group.name, ...group.aliases])
      out.push(entry(name, served.providers, served.contextLength, served.apis));
  }
  const byModel = new Map<string, { providers: number; apis: Set<string> | undefined }>();
  const count = (model: string, provider: PoolProvider) => {
    if (configured.has(model)) return;
    const seen = byModel.get(model) ?? { providers: 0, apis: undefined };
    seen.providers++;
    seen.apis = addApis(seen.apis, provider, model);
    byModel.set(model, seen);
  };
  for (const session of catalog.agents.all()) {
    if (session.closed || session.draining) continue;
    for (const model of session.models) count(model.id, session);
  }
  for (const provider of catalog.direct) {
    if (provider.accepting) for (const model of provider.servedModels) count(model, provider);
  }
  for (const [model, seen] of byModel) out.push(entry(model, seen.providers, catalog.contextLength(model), seen.apis));
  return out;
}
