/**
 * The inference endpoints (`POST /v1/chat/completions`, `/v1/messages`, `/v1/responses`) served
 * without walking express's router: the request gets express's request/response prototypes (as
 * `app.handle` gives them, so the pipeline's `req.get`, `res.status`, `res.json` work unchanged),
 * then the same middleware in the same order as the routed app — request context, key check,
 * body (`rawBody`), inference handler, error handler. Why: per request, the router's layer walk,
 * `/v1` prefix trimming and body-parser were ~8 % of the edge's CPU, on the path every request takes.
 *
 * Everything else (other paths and methods, a query string) goes to the express app.
 */
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Express, NextFunction, Request, Response } from 'express';
import type { EdgeContext } from '../edge-context.js';
import type { DialectRoutes } from './app.js';
import { errorHandler } from './error-handler.js';
import { inferenceHandler } from './inference.js';
import { rawBody } from './json-body.js';
import { keyCheck } from './key-check.js';
import { requestContext } from './request-context.js';

type Middleware = (req: Request, res: Response, next: NextFunction) => unknown;

/** `app` answers whatever the fast path does not take. */
export function withInferenceFastPath(app: Express, edge: EdgeContext, routes: DialectRoutes): RequestListener {
  const context = requestContext(edge.logger);
  const check: Middleware = keyCheck(edge);
  const fail = errorHandler(routes.dialectForPath);
  const handlers = new Map<string, Middleware>();
  for (const [path, route] of Object.entries(routes.inference)) handlers.set(path, inferenceHandler(route, edge));
  const body: Middleware = rawBody(edge.config.maxBodyBytes);
  const requestPrototype = app.request as object;
  const responsePrototype = app.response as object;

  return function edgeRequest(incoming: IncomingMessage, outgoing: ServerResponse): void {
    const handler = incoming.method === 'POST' ? handlers.get(incoming.url!) : undefined;
    if (handler === undefined) {
      app(incoming, outgoing);
      return;
    }
    // What express's app.handle and router.handle set before the first middleware.
    const req = Object.setPrototypeOf(incoming, requestPrototype) as Request;
    const res = Object.setPrototypeOf(outgoing, responsePrototype) as Response;
    Object.assign(req, { res, originalUrl: req.url, baseUrl: '', params: {} });
    Object.assign(res, { req, locals: Object.create(null) as Record<string, unknown> });
    const onError = (error: unknown) => fail(error, req, res, onError);
    context(req, res, () => {
      void check(req, res, (error?: unknown) => {
        if (error !== undefined) return onError(error);
        body(req, res, (failure?: unknown) => {
          if (failure !== undefined) return onError(failure);
          void handler(req, res, (later?: unknown) => {
            if (later !== undefined) onError(later);
          });
        });
      });
    });
  };
}
