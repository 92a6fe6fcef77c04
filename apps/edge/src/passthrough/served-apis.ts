/**
 * Which providers of a model serve an API (proto `ModelInfo.apis`, from the agent's discovery:
 * apps/agent/src/backends/openai-backend.ts). A request goes only to providers that serve its
 * API or do not say (direct providers, agents of older versions); when every connected provider
 * of the model says it does not, the request is refused before any backend call instead of
 * being sent to a backend that would answer 404 (vLLM registers only its model's task routes).
 *
 * The answer is kept per group and API until the catalog's `version` changes (an agent joined or
 * left, a reload): Chat Completions asks on every request.
 */
import { IopError, excerpt } from '@iop/core';
import type { ModelGroup } from '../pool/pool-config.js';
import type { ProviderPool } from '../pool/provider-pool.js';
import type { ServedApi } from './passthrough-api.js';

/** What each API's error names. */
const ENDPOINTS: Record<ServedApi, string> = {
  chat: 'chat completions (POST /v1/chat/completions)',
  completions: 'text completions (POST /v1/completions)',
  embeddings: 'embeddings (POST /v1/embeddings)',
  rerank: 'rerank and score (POST /v1/rerank, /v1/score)',
};

/**
 * The providers of `model` to leave out because they do not serve `api` (empty when none is).
 * @throws IopError `invalid_request` (400, `param: "model"`) when connected providers serve the
 *   model and none of them serves `api`; a model nothing serves now is left to the pool (404/503).
 */
export function providersWithoutApi(pool: ProviderPool, model: string, api: ServedApi): ReadonlySet<string> {
  const group = pool.resolve(model);
  const version = pool.catalog.version;
  let byApi = decided.get(group);
  if (byApi === undefined || byApi.version !== version) decided.set(group, (byApi = { version, answers: new Map() }));
  let answer = byApi.answers.get(api);
  if (answer === undefined) byApi.answers.set(api, (answer = decide(pool, group, api)));
  if ('servedInstead' in answer)
    throw new IopError(
      'invalid_request',
      `The model \`${excerpt(model)}\` does not serve ${ENDPOINTS[api]}; it serves ${answer.servedInstead}.`,
      {
        param: 'model',
      },
    );
  return answer.without;
}

/** What the providers of a group say about an API: those to leave out, or (none serves it) what they serve instead. */
type Answer = { without: ReadonlySet<string> } | { servedInstead: string };

/** Answers per group (the group object in service), for one catalog version. */
const decided = new WeakMap<ModelGroup, { version: number; answers: Map<ServedApi, Answer> }>();

function decide(pool: ProviderPool, group: ModelGroup, api: ServedApi): Answer {
  const without = new Set<string>();
  const others = new Set<string>();
  let serving = 0;
  for (const [provider, target] of pool.candidates(group)) {
    const apis = provider.apisOf?.(target.model);
    if (apis === undefined || apis.includes(api)) {
      serving++;
      continue;
    }
    without.add(provider.id);
    for (const other of apis) others.add(other);
  }
  if (serving === 0 && without.size > 0) {
    const served = [...others].map((name) => ENDPOINTS[name as ServedApi] ?? name).join(', ');
    return { servedInstead: served || 'no known API' };
  }
  return { without };
}
