/**
 * The edge's HTTP API (express). Routes:
 * - `POST /v1/chat/completions` — OpenAI Chat Completions (passthrough to the backend)
 * - `GET /v1/models` — the model names a client may send now: configured groups and aliases with a
 *   provider able to serve them, and the served models of connected agents and direct providers
 *   (pool/model-list.ts)
 * - `GET /healthz` (process up), `GET /readyz` (at least one agent connected), `GET /metrics`
 * - `HEAD /` — connection warm-up some clients send (Claude Code); `GET /` a short "iop is running" text
 * - `GET /v1/models` with `anthropic-version`: the same list in Anthropic's shape
 * A known path with another method is a 405 with `Allow`; an unknown path a 404.
 * Dialect endpoints are mounted from `routes` so the pipeline stays one.
 */
import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import type { Dialect } from '@iop/core';
import type { EdgeContext } from '../edge-context.js';
import { keyCheck } from './key-check.js';
import { errorHandler } from './error-handler.js';
import { inferenceHandler, type InferenceRoute } from './inference.js';
import { bodyLimitsOf, rawBody } from './json-body.js';
import { anthropicModelList, listModels } from '../pool/model-list.js';
import { EDGE_VERSION } from '../version.js';
import { requestContext } from './request-context.js';
import { IopError } from '@iop/core';

export interface DialectRoutes {
  /** Picks the dialect whose error shape a path's clients expect. */
  dialectForPath: (path: string) => Dialect;
  /** POST endpoints served by the inference pipeline, by path. */
  inference: Record<string, InferenceRoute>;
  /** Extra routers (e.g. Responses retrieval, count_tokens), mounted after auth. */
  extra?: Array<(app: Express, edge: EdgeContext) => void>;
}

/** The shape of express 5's router layers that `allowedMethods` reads. */
interface RouteLayer {
  route?: { methods: Record<string, boolean> };
  match(path: string): boolean;
}

/** Methods with a route for `path` (RFC 9110 §15.5.6: a 405 lists them in `Allow`). */
function allowedMethods(app: Express, path: string): string[] {
  const methods = new Set<string>();
  for (const layer of (app.router as unknown as { stack: RouteLayer[] }).stack) {
    if (layer.route === undefined || !layer.match(path)) continue;
    for (const [method, on] of Object.entries(layer.route.methods)) if (on && method !== '_all') methods.add(method.toUpperCase());
  }
  return [...methods];
}

export function createApp(edge: EdgeContext, routes: DialectRoutes): Express {
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.use(requestContext(edge.logger));

  app.head('/', (_req, res) => void res.status(200).end());
  app.get('/', (_req, res) => {
    res
      .type('text/plain')
      .send(
        `iop is running (edge ${EDGE_VERSION}).\nAPI: POST /v1/chat/completions, /v1/responses, /v1/messages; GET /v1/models. Probes: /healthz, /readyz. Metrics: /metrics.\n`,
      );
  });
  app.get('/healthz', (_req, res) => void res.json({ status: 'ok' }));
  app.get('/readyz', (_req, res) => {
    const all = edge.registry.all();
    const agents = all.filter((session) => !session.draining).length;
    // Direct providers serve requests without any agent: an edge with one taking runs is ready.
    const directProviders = edge.pool.direct.filter((provider) => provider.accepting).length;
    const ready = agents + directProviders > 0;
    res
      .status(ready ? 200 : 503)
      .json({ status: ready ? 'ready' : all.length > 0 ? 'every agent is draining' : 'no agents connected', agents, directProviders });
  });
  app.get('/metrics', async (_req, res, next) => {
    try {
      res.setHeader('content-type', edge.metrics.registry.contentType);
      res.end(await edge.metrics.registry.metrics());
    } catch (error) {
      next(error);
    }
  });

  app.use('/v1', keyCheck(edge));
  app.get('/v1/models', (req, res) => {
    const models = listModels(edge.pool.catalog);
    // Anthropic's SDKs send `anthropic-version`: they get Anthropic's list shape (Models API).
    if (req.get('anthropic-version') !== undefined) res.json(anthropicModelList(models));
    else res.json({ object: 'list', data: models });
  });
  const body = rawBody(bodyLimitsOf(edge));
  for (const [path, route] of Object.entries(routes.inference)) app.post(path, body, inferenceHandler(route, edge));
  for (const mount of routes.extra ?? []) mount(app, edge);

  app.use((req: Request, res: Response, next: NextFunction) => {
    const allowed = allowedMethods(app, req.path);
    if (allowed.length === 0) return next(new IopError('not_found', `no route for ${req.method} ${req.path}`));
    res.setHeader('allow', allowed.join(', '));
    next(new IopError('method_not_allowed', `${req.method} is not allowed on ${req.path}; use ${allowed.join(' or ')}`));
  });
  app.use(errorHandler(routes.dialectForPath));
  return app;
}
