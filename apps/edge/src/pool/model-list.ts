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
 * providers able to serve it now. Computed on each call, so
 * it follows agents joining and leaving and config reloads at once.
 */
import type { ModelListing } from '@iop/core';
import type { ModelGroup } from './pool-config.js';
import type { ModelCatalog } from './model-catalog.js';

const entry = (id: string, providers: number, contextLength: number): ModelListing => ({
  id,
  created: 0,
  contextLength: contextLength > 0 ? contextLength : null,
  providers,
});

/** Accepting providers of the first group of `group` and its fallbacks that has any, with its context length. */
function serving(catalog: ModelCatalog, group: ModelGroup): { providers: number; contextLength: number } | undefined {
  for (const candidate of [group, ...group.fallbacks.map((name) => catalog.resolver.group(name))]) {
    if (candidate === undefined) continue;
    let providers = 0;
    for (const provider of catalog.candidates(candidate).keys()) if (provider.accepting) providers++;
    if (providers === 0) continue;
    const contextLength = Math.max(0, ...candidate.targets.map((target) => catalog.contextLength(target.model)));
    return { providers, contextLength };
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
    for (const name of [group.name, ...group.aliases]) out.push(entry(name, served.providers, served.contextLength));
  }
  const providersByModel = new Map<string, number>();
  const count = (model: string) => {
    if (!configured.has(model)) providersByModel.set(model, (providersByModel.get(model) ?? 0) + 1);
  };
  for (const session of catalog.agents.all()) {
    if (session.closed || session.draining) continue;
    for (const model of session.models) count(model.id);
  }
  for (const provider of catalog.direct) {
    if (provider.accepting) for (const model of provider.servedModels) count(model);
  }
  for (const [model, providers] of providersByModel) out.push(entry(model, providers, catalog.contextLength(model)));
  return out;
}
