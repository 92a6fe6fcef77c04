/**
 * The dialect registry: every client API the edge serves, one registration line each. The edge
 * mounts each dialect's endpoints (`Dialect.endpoints`: paths, methods, path parameters) from here —
 * the fast path (http/fast-path.ts) and the express app (http/app.ts) alike, through one
 * `RouteTable` — and serves each endpoint's role with the one handler for it: the inference
 * pipeline (request/inference.ts), token counting (http/count-tokens.ts), the model list
 * (http/model-routes.ts). Adding a dialect = its folder in `packages/dialects` and a line below.
 */
import type { Express, NextFunction, Request, Response } from 'express';
import type { Dialect, DialectEndpoint } from '@iop/core';
import type { EdgeContext } from './edge-context.js';
import { gemini } from '@iop/dialects';
import { anthropicDialect, chatDialect, responsesDialect } from './dialects.js';
import { countTokensHandler } from './request/count-tokens.js';
import { inferenceHandler } from './request/inference.js';
import type { InferenceRoute } from './request/inference-route.js';
import { modelGetHandler, modelListHandler } from './http/model-routes.js';
import { mountResponsesRetrieval, responsesInferenceRoute } from './request/responses-routes.js';
import { RouteTable, type RouteEntry } from './http/route-table.js';
import type { ResponseStore } from './responses-store/index.js';
import { PASSTHROUGH_API_ENDPOINTS } from './request/relayed-routes.js';
import { guardedStore, type GuardedResponseStore } from './responses-store/guarded-store.js';

export interface DialectRegistration {
  dialect: Dialect;
  /** A stateful dialect's inference hooks (Responses: stored history prepended, the result stored). */
  hooks?: (edge: EdgeContext, store: GuardedResponseStore) => Pick<InferenceRoute, 'prepare' | 'onResult'>;
  /** Routes of the dialect beyond its endpoints that need the edge's state (Responses retrieval). */
  mount?: (app: Express, store: GuardedResponseStore) => void;
}

/**
 * The registry. The order matters only where two dialects declare one endpoint (`GET /v1/models`): the first answers
 * failures there.
 */
export const DIALECTS: readonly DialectRegistration[] = [
  { dialect: chatDialect },
  { dialect: anthropicDialect },
  {
    dialect: responsesDialect,
    hooks: (edge, store) => responsesInferenceRoute(store, edge),
    mount: mountResponsesRetrieval,
  },
  { dialect: gemini },
];

export type EndpointHandler = (req: Request, res: Response, next: NextFunction) => unknown;

export interface DialectRoutes {
  table: RouteTable<EndpointHandler>;
  /** The dialect whose envelope a failure on `path` is rendered in (OpenAI's where no dialect claims the path). */
  dialectForPath: (path: string) => Dialect;
  /** The first segment of every endpoint's path (`/v1`, `/v1beta`): the key check guards each. */
  apiRoots: string[];
  /** Extra routers (Responses retrieval, admin), mounted after the key check and the endpoints. */
  extra: Array<(app: Express, edge: EdgeContext) => void>;
}

function handlerFor(
  edge: EdgeContext,
  dialect: Dialect,
  endpoint: DialectEndpoint,
  hooks: Pick<InferenceRoute, 'prepare' | 'onResult'>,
): EndpointHandler {
  switch (endpoint.role) {
    case 'inference':
      return inferenceHandler({ dialect, passthrough: endpoint.passthrough === true, ...hooks }, edge);
    case 'count-tokens':
      return countTokensHandler(edge, dialect);
    case 'model-list':
      return modelListHandler(edge, dialect);
    case 'model-get':
      return modelGetHandler(edge, dialect);
  }
}

export function buildDialectRoutes(
  edge: EdgeContext,
  responses: ResponseStore,
  registrations: readonly DialectRegistration[] = DIALECTS,
): DialectRoutes {
  // Store outages become 503s with Retry-After, and refuse the next store before it runs.
  const store = guardedStore(responses, edge.logger);
  const entries: Array<RouteEntry<EndpointHandler>> = [];
  const roots = new Set<string>();
  for (const { dialect, hooks } of registrations) {
    const own = hooks?.(edge, store) ?? {};
    const inferenceHooks = {
      ...(own.prepare === undefined ? {} : { prepare: own.prepare }),
      ...(own.onResult === undefined ? {} : { onResult: own.onResult }),
    };
    for (const endpoint of dialect.endpoints) {
      entries.push({ dialect, endpoint, handler: handlerFor(edge, dialect, endpoint, inferenceHooks) });
      roots.add(`/${endpoint.path.split('/')[1]!}`);
    }
  }
  // The JSON APIs relayed as they are (embeddings, completions, rerank, score): request/relayed-routes.ts.
  for (const { endpoint, route } of PASSTHROUGH_API_ENDPOINTS) {
    entries.push({ dialect: route.dialect, endpoint, handler: inferenceHandler(route, edge) });
    roots.add(`/${endpoint.path.split('/')[1]!}`);
  }
  const table = new RouteTable(entries);
  const fallback = registrations[0]!.dialect;
  return {
    table,
    dialectForPath: (path) => table.dialectFor(path) ?? fallback,
    apiRoots: [...roots],
    extra: registrations.flatMap(({ mount }) => (mount === undefined ? [] : [(app: Express) => mount(app, store)])),
  };
}
