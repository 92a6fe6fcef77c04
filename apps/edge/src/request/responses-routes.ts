/**
 * OpenAI Responses: `POST /v1/responses` runs through the shared inference pipeline; stored
 * conversation state makes `previous_response_id` work and backs the retrieval endpoints
 * (`GET /v1/responses/{id}`, `DELETE /v1/responses/{id}`, `GET /v1/responses/{id}/input_items`).
 * `store: false` keeps nothing. Unknown ids are 404 `not_found` in OpenAI shape.
 *
 * Stored responses belong to the client API key that created them (`RequestLocals.owner`, set by
 * `keyCheck`, http/key-check.ts): another key's id is answered exactly like an unknown one, so a key cannot learn
 * that an id exists.
 *
 * Size: a request that would be stored (`store` not false) whose input, with the history it
 * continues, is over `responsesStore.maxResponseBytes` is refused before it runs: 413
 * `request_too_large`, `param: "input"`, naming the limit and `store: false`. The store checks the
 * whole record (input, history and output) again when it writes; a record over the limit then is
 * not kept and the answer says `store: false`.
 *
 * Availability (docs/architecture.md "Stored Responses"): a response is reported stored only once
 * its row exists. A request that asks to store while the store is failing gets a 503 with
 * `Retry-After` before it runs (`GuardedResponseStore.ready`); when the write at the end fails, a
 * non-stream answer is that 503 and a stream ends with `response.failed` (`store: false`) instead
 * of its terminal event, which is written only after the write.
 *
 * Over a WebSocket (responses-socket/) the same route runs with the socket's dialect (events as
 * messages) and the connection's memory of its most recent response (`RecentResponse`).
 */
import type { Express, NextFunction, Request, Response } from 'express';
import { IopError, type InferenceRequest } from '@iop/core';
import type { EdgeContext } from '../edge-context.js';
import type { Dialect } from '@iop/core';
import {
  responseRecordOf,
  responsesDialect,
  storedResponseOf,
  withHistory,
  type ResponseObject,
  type StoredResponse,
} from '../dialects.js';
import { keepResponse, type InputItemsQuery, type ResponseStore } from '../responses-store/index.js';
import type { GuardedResponseStore } from '../responses-store/guarded-store.js';
import type { InferenceRoute } from './inference-route.js';
import { locals, type RequestLocals } from '../http/request-context.js';

function notFound(id: string, param?: string): IopError {
  return new IopError('not_found', `Response with id '${id}' not found.`, param === undefined ? {} : { param });
}

/**
 * The request's owner. @throws IopError internal when the API key check did not run (a wiring bug: never fall back to a
 * shared owner).
 */
function ownerOf(context: RequestLocals): string {
  if (context.owner === undefined)
    throw new IopError('internal', 'the request has no owner: the API key check did not run');
  return context.owner;
}

/**
 * Bytes `value` takes as JSON, estimated without serializing it: UTF-8 bytes of its strings plus a
 * few bytes of punctuation per value (escapes not counted). Walks the value once.
 */
export function estimateJsonBytes(value: unknown): number {
  if (typeof value === 'string') return Buffer.byteLength(value) + 2;
  if (Array.isArray(value)) return value.reduce((sum: number, item: unknown) => sum + estimateJsonBytes(item) + 1, 2);
  if (typeof value === 'object' && value !== null) {
    let sum = 2;
    for (const [key, item] of Object.entries(value)) sum += Buffer.byteLength(key) + 4 + estimateJsonBytes(item);
    return sum;
  }
  return 8;
}

function refuseUnstorable(bytes: number, maxResponseBytes: number): void {
  if (bytes <= maxResponseBytes) return;
  throw new IopError(
    'request_too_large',
    `the input is too large to store: about ${bytes} bytes with its history, the limit is ${maxResponseBytes} bytes per stored response; send "store": false to run it without storing`,
    { param: 'input' },
  );
}

/**
 * A connection's memory of its most recent response (Responses over WebSocket): found by
 * `previous_response_id` before the store, and with `store: false` too.
 */
export interface RecentResponse {
  get(id: string): StoredResponse | undefined;
  /** Called with every response that ended; a failed one forgets the last. */
  set(record: StoredResponse | undefined): void;
}

export interface ResponsesRouteOptions {
  /** The dialect whose encoder writes the stream (default the SSE one). */
  dialect?: Dialect;
  recent?: RecentResponse;
}

/** The inference route: prepends stored history for `previous_response_id`, stores the result. */
export function responsesInferenceRoute(
  store: GuardedResponseStore,
  edge: EdgeContext,
  options: ResponsesRouteOptions = {},
): InferenceRoute {
  const { recent } = options;
  return {
    dialect: options.dialect ?? responsesDialect,
    passthrough: false,
    async prepare(request: InferenceRequest, body: Record<string, unknown>, context: RequestLocals) {
      const stored = body.store !== false;
      const maxResponseBytes = edge.config.responsesStore.maxResponseBytes;
      const inputBytes = stored ? estimateJsonBytes(body.input) : 0;
      if (stored) {
        refuseUnstorable(inputBytes, maxResponseBytes);
        // A store known to be failing refuses before any work (503, Retry-After).
        await store.ready();
      }
      const previousId = body.previous_response_id;
      if (previousId === undefined || previousId === null) return request;
      if (typeof previousId !== 'string' || previousId.length === 0)
        throw new IopError('invalid_request', 'previous_response_id must be a non-empty string', {
          param: 'previous_response_id',
        });
      const previous = recent?.get(previousId) ?? (await store.get(previousId, ownerOf(context)));
      if (previous === undefined) throw notFound(previousId, 'previous_response_id');
      if (stored) refuseUnstorable(inputBytes + estimateJsonBytes(previous.conversation), maxResponseBytes);
      return withHistory(request, previous);
    },
    async onResult(result: unknown, request: InferenceRequest, _body: Record<string, unknown>, context: RequestLocals) {
      const response = result as ResponseObject;
      recent?.set(response.status === 'failed' ? undefined : responseRecordOf(request, response));
      try {
        await keepResponse(store, storedResponseOf(request, response), ownerOf(context));
      } catch (error) {
        // Not kept: the answer says so before it leaves (a stream's terminal event is written
        // after this, a non-stream body too), so `store: true` always means the row exists.
        response.store = false;
        if (error instanceof IopError && error.code === 'request_too_large') {
          // Over the size limit: the answer stands, unstored (`store: false`).
          context.log.warn({ error: error.message }, 'response not stored: over the size limit');
          return;
        }
        context.log.error({ err: error, responseId: response.id }, 'storing a response failed');
        // The store is down: a non-stream answer becomes this 503, a stream ends with it in band.
        throw error;
      }
    },
  };
}

function wrap(handler: (req: Request, res: Response) => Promise<void>) {
  return function responsesRoute(req: Request, res: Response, next: NextFunction): void {
    handler(req, res).catch(next);
  };
}

function listQuery(req: Request): InputItemsQuery {
  const query: InputItemsQuery = {};
  const { after, limit, order } = req.query;
  if (typeof after === 'string') query.after = after;
  if (typeof limit === 'string') {
    const value = Number(limit);
    if (!Number.isInteger(value) || value < 1 || value > 100)
      throw new IopError('invalid_request', 'limit must be an integer from 1 to 100', { param: 'limit' });
    query.limit = value;
  }
  if (order !== undefined) {
    if (order !== 'asc' && order !== 'desc')
      throw new IopError('invalid_request', "order must be 'asc' or 'desc'", { param: 'order' });
    query.order = order;
  }
  return query;
}

/** Mounts the retrieval endpoints. */
export function mountResponsesRetrieval(app: Express, store: ResponseStore): void {
  app.get(
    '/v1/responses/:id',
    wrap(async (req, res) => {
      const id = String(req.params.id);
      const stored = await store.get(id, ownerOf(locals(res)));
      if (stored === undefined) throw notFound(id);
      res.json(stored.response);
    }),
  );
  app.delete(
    '/v1/responses/:id',
    wrap(async (req, res) => {
      const id = String(req.params.id);
      if (!(await store.delete(id, ownerOf(locals(res))))) throw notFound(id);
      locals(res).log.info({ responseId: id }, 'stored response deleted');
      res.json({ id, object: 'response', deleted: true });
    }),
  );
  app.get(
    '/v1/responses/:id/input_items',
    wrap(async (req, res) => {
      const id = String(req.params.id);
      const page = await store.inputItems(id, ownerOf(locals(res)), listQuery(req));
      if (page === undefined) throw notFound(id);
      res.json(page);
    }),
  );
}
