/**
 * The edge's HTTP API (express). Routes:
 * - every registered dialect's endpoints (routes.ts: OpenAI Chat and Responses, Anthropic
 *   Messages, Gemini; inference, token counting, model lists), through the dialect registry's
 *   `RouteTable`, behind the key check on each API root (`/v1`, `/v1beta`, …)
 * - `POST /v1/embeddings`, `/v1/completions`, `/v1/rerank`, `/v1/score` (and vLLM's `/rerank`,
 *   `/v2/rerank`, `/score`) — JSON APIs relayed as they are (passthrough/; their routes
 *   request/relayed-routes.ts, mounted by routes.ts)
 * - `GET /healthz` (process up), `GET /readyz` (at least one agent connected), `GET /metrics`
 * - `HEAD /` — connection warm-up some clients send (Claude Code); `GET /` a short "iop is running" text
 * A known path with another method is a 405 with `Allow`; an unknown path a 404, each in the
 * envelope of the dialect the path belongs to.
 */
import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import type { EdgeContext } from '../edge-context.js';
import type { DialectRoutes, EndpointHandler } from '../routes.js';
import { keyCheck } from './key-check.js';
import { errorHandler } from './error-handler.js';
import { bodyLimitsOf, rawBody } from './json-body.js';
import { EDGE_VERSION } from '../version.js';
import { locals, requestContext } from './request-context.js';
import { IopError } from '@iop/core';
import type { RouteMatch } from './route-table.js';

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
    for (const [method, on] of Object.entries(layer.route.methods))
      if (on && method !== '_all') methods.add(method.toUpperCase());
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
        `iop is running (edge ${EDGE_VERSION}).\nAPI: POST /v1/chat/completions, /v1/responses, /v1/messages, /v1beta/models/{model}:generateContent, /v1/completions, /v1/embeddings, /v1/rerank, /v1/score; GET /v1/models. Probes: /healthz, /readyz. Metrics: /metrics.\n`,
      );
  });
  app.get('/healthz', (_req, res) => void res.json({ status: 'ok' }));
  app.get('/readyz', (_req, res) => {
    const all = edge.registry.all();
    const agents = all.filter((session) => !session.draining).length;
    // Direct providers serve requests without any agent: an edge with one taking runs is ready.
    const directProviders = edge.pool.direct.filter((provider) => provider.accepting).length;
    const ready = agents + directProviders > 0;
    res.status(ready ? 200 : 503).json({
      status: ready ? 'ready' : all.length > 0 ? 'every agent is draining' : 'no agents connected',
      agents,
      directProviders,
    });
  });
  app.get('/metrics', async (_req, res, next) => {
    try {
      res.setHeader('content-type', edge.metrics.registry.contentType);
      res.end(await edge.metrics.registry.metrics());
    } catch (error) {
      next(error);
    }
  });

  const check = keyCheck(edge, (path) => routes.table.keySources(path));
  for (const root of routes.apiRoots) app.use(root, check);
  const body = rawBody(bodyLimitsOf(edge));
  app.use((req: Request, res: Response, next: NextFunction) => {
    let match: RouteMatch<EndpointHandler> | undefined;
    try {
      match = routes.table.match(req.method, req.url, req.headers);
    } catch (error) {
      return next(error); // broken percent-encoding in a path parameter: a 400
    }
    if (match === undefined) return next();
    serveEndpoint(match, req, res, next, body);
  });
  for (const mount of routes.extra) mount(app, edge);

  app.use((req: Request, res: Response, next: NextFunction) => {
    const allowed = [...new Set([...allowedMethods(app, req.path), ...routes.table.allowed(req.path)])];
    if (allowed.length === 0) return next(new IopError('not_found', `no route for ${req.method} ${req.path}`));
    res.setHeader('allow', allowed.join(', '));
    next(
      new IopError('method_not_allowed', `${req.method} is not allowed on ${req.path}; use ${allowed.join(' or ')}`),
    );
  });
  app.use(errorHandler(routes.dialectForPath));
  return app;
}

/**
 * Serves a matched dialect endpoint: the request's target (endpoint, path parameters, query) in
 * its locals, then the body (`POST`) and the endpoint's handler. The fast path calls it too.
 */
export function serveEndpoint(
  match: RouteMatch<EndpointHandler>,
  req: Request,
  res: Response,
  next: NextFunction,
  body: (req: Request, res: Response, next: NextFunction) => unknown,
): void {
  const { entry, params, query } = match;
  const q = req.url.indexOf('?');
  locals(res).target = { endpoint: entry.endpoint, path: q < 0 ? req.url : req.url.slice(0, q), params, query };
  if (entry.endpoint.method !== 'POST') {
    void entry.handler(req, res, next);
    return;
  }
  body(req, res, (failure?: unknown) => {
    if (failure !== undefined) return next(failure);
    void entry.handler(req, res, next);
  });
}
