/**
 * The inference endpoints of every registered dialect (`POST /v1/chat/completions`, `/v1/messages`,
 * `/v1/responses`, `/v1beta/models/{model}:generateContent`, …) served without walking express's
 * router: the request and response already carry express's methods (`expressServerClasses`, so
 * the pipeline's `req.get`, `res.status`, `res.json` work unchanged), then the same middleware in
 * the same order as the routed app — request context, key check, body (`rawBody`), inference
 * handler, error handler. Why: per request, the router's layer walk, `/v1` prefix trimming and
 * body-parser were ~8 % of the edge's CPU, on the path every request takes. The endpoint is found
 * in the dialect registry's `RouteTable`: one `Map` lookup for an exact path, a prefix check and
 * one anchored regex per parameterised one.
 *
 * Everything else (other endpoints, paths and methods) goes to the express app.
 */
import http, { type IncomingMessage, type RequestListener, type ServerResponse } from 'node:http';
import type { Express, NextFunction, Request, Response } from 'express';
import type { EdgeContext } from '../edge-context.js';
import type { DialectRoutes, EndpointHandler } from '../routes.js';
import { serveEndpoint } from './app.js';
import { errorHandler } from './error-handler.js';
import { bodyLimitsOf, rawBody } from './json-body.js';
import { keyCheck } from './key-check.js';
import { requestContext } from './request-context.js';
import type { RouteMatch } from './route-table.js';

type Middleware = (req: Request, res: Response, next: NextFunction) => unknown;

/** The inference endpoint `incoming` asks for, if any (anything else, a broken path included, is the app's). */
function inferenceMatch(routes: DialectRoutes, incoming: IncomingMessage): RouteMatch<EndpointHandler> | undefined {
  if (incoming.method !== 'POST') return undefined;
  try {
    const match = routes.table.match('POST', incoming.url!, incoming.headers);
    return match?.entry.endpoint.role === 'inference' ? match : undefined;
  } catch {
    return undefined;
  }
}

/** `app` answers whatever the fast path does not take. */
export function withInferenceFastPath(app: Express, edge: EdgeContext, routes: DialectRoutes): RequestListener {
  const context = requestContext(edge.logger);
  const check: Middleware = keyCheck(edge, (path) => routes.table.keySources(path));
  const fail = errorHandler(routes.dialectForPath);
  const body: Middleware = rawBody(bodyLimitsOf(edge));

  return function edgeRequest(incoming: IncomingMessage, outgoing: ServerResponse): void {
    const match = inferenceMatch(routes, incoming);
    if (match === undefined) {
      app(incoming, outgoing);
      return;
    }
    // What express's app.handle and router.handle set before the first middleware (the
    // prototypes are express's already: expressServerClasses).
    const req = incoming as Request;
    const res = outgoing as Response;
    Object.assign(req, { res, originalUrl: req.url, baseUrl: '', params: match.params });
    Object.assign(res, { req, locals: Object.create(null) as Record<string, unknown> });
    const onError = (error: unknown) => fail(error, req, res, onError);
    context(req, res, () => {
      void check(req, res, (error?: unknown) => {
        if (error !== undefined) return onError(error);
        serveEndpoint(
          match,
          req,
          res,
          (later?: unknown) => {
            if (later !== undefined) onError(later);
          },
          body,
        );
      });
    });
  };
}

/**
 * The request and response classes for the edge's HTTP server (`http.createServer`'s
 * `IncomingMessage` and `ServerResponse` options, Node docs "http.createServer"): Node's, with the
 * app's express request and response methods and getters on their prototypes. The fast path then
 * needs no `Object.setPrototypeOf` per request, which left every request's `req` and `res` as
 * slow dictionary-mode objects (about 5 KB of allocation per request); express's own routing still
 * sets its prototypes, which carry the same methods.
 */
export function expressServerClasses(app: Express): {
  IncomingMessage: typeof http.IncomingMessage;
  ServerResponse: typeof http.ServerResponse;
} {
  class ExpressRequest extends http.IncomingMessage {}
  // Typed as Node's class: a subclass cannot restate ServerResponse's generic constructor signature.
  const ExpressResponse = class extends http.ServerResponse {} as typeof http.ServerResponse;
  copyChain(ExpressRequest.prototype, app.request, http.IncomingMessage.prototype);
  copyChain(ExpressResponse.prototype, app.response, http.ServerResponse.prototype);
  return { IncomingMessage: ExpressRequest, ServerResponse: ExpressResponse };
}

/** Defines on `target` the own properties of `source` and of its prototypes below `stop` (the nearer one wins). */
function copyChain(target: object, source: object, stop: object): void {
  const chain: object[] = [];
  for (
    let proto: object | null = source;
    proto !== null && proto !== stop;
    proto = Object.getPrototypeOf(proto) as object | null
  )
    chain.push(proto);
  for (const proto of chain.reverse()) Object.defineProperties(target, Object.getOwnPropertyDescriptors(proto));
}
