/**
 * One Responses WebSocket connection (docs/protocols.md "Responses over WebSocket"): its `response.create` messages run
 * one at a time, each through the edge's one inference pipeline (request/inference.ts with the Responses route of
 * http/responses-routes.ts) with a `SocketResponse` as its writer, after the same request context and key check
 * middleware as `POST /v1/responses` (the key is checked again per response: a key revoked mid-connection stops working
 * at its next response).
 *
 * - Sequence: responses follow each other on the connection (OpenAI's mode without `stream_id` runs one at a time). A
 *   `response.create` that comes after the running response's terminal event (while the edge still stores it) waits for
 *   it; one that comes before gets a 409 `error` event (Codex CLI never sends the next before `response.completed`).
 *   Other messages get their own `error` event and the connection stays usable.
 * - `previous_response_id`: the connection keeps its most recent response in memory (with `store: false` too), found
 *   before the store; other ids come from the store as over HTTP.
 * - `generate: false`: a warm-up answered with `response.created`, `response.in_progress` and `response.completed` (no
 *   output, zero usage) without a backend run; its id continues the conversation (its input kept as the connection's
 *   most recent response).
 * - Close: the client's close mid-response stops it as a client that hung up (backend run cancelled, usage recorded,
 *   ledger row 499). With no response running, `idleTimeoutMs` of silence closes the connection (1000). A ping every
 *   `pingIntervalMs` keeps proxies from cutting a quiet connection; a peer that leaves one unanswered until the next is
 *   terminated. `drain()` (edge shutdown) closes it with 1001 after the current response.
 */
import type { IncomingMessage } from 'node:http';
import type { Request, Response, NextFunction } from 'express';
import type { RawData, WebSocket } from 'ws';
import { IopError, type StreamEvent } from '@iop/core';
import type { EdgeContext } from '../edge-context.js';
import {
  createResponsesLinesEncoder,
  responsesDialect,
  type ResponseObject,
  type StoredResponse,
} from '../dialects.js';
import { errorHandler } from '../http/error-handler.js';
import { modelAllowed } from '../keys/api-key.js';
import { inferenceHandler } from '../request/inference.js';
import type { InferenceRoute } from '../request/inference-route.js';
import { keyCheck } from '../http/key-check.js';
import { requestContext, locals } from '../http/request-context.js';
import { responsesInferenceRoute } from '../request/responses-routes.js';
import type { ResponseStore } from '../responses-store/index.js';
import { guardedStore } from '../responses-store/guarded-store.js';
import { parseClientEvent } from './client-events.js';
import { errorEvent, SocketResponse } from './socket-response.js';

/** Bytes a socket may hold unsent before the writer waits ('drain'). */
const WRITE_HIGH_WATER_MARK = 64 * 1024;

/** The Responses dialect whose stream encoder writes JSON lines (one message per event). */
const SOCKET_DIALECT = { ...responsesDialect, createStreamEncoder: createResponsesLinesEncoder };

type Middleware = (req: Request, res: Response, next: NextFunction) => unknown;

export interface SocketConnectionOptions {
  edge: EdgeContext;
  store: ResponseStore;
  socket: WebSocket;
  /** The upgrade request: its headers (key, gate header, trace context) apply to every response. */
  upgrade: IncomingMessage;
  /** Called once when the connection has closed. */
  onClosed: () => void;
}

export class SocketConnection {
  private readonly socket: WebSocket;
  private readonly edge: EdgeContext;
  private readonly headers: IncomingMessage['headers'];
  private readonly route: InferenceRoute;
  private readonly handler: Middleware;
  private readonly context: Middleware;
  private readonly check: Middleware;
  private readonly fail = errorHandler(() => responsesDialect);
  private recent: StoredResponse | undefined;
  private current: SocketResponse | undefined;
  /** The `response.create` that came after the current response's terminal event. */
  private next: { body: Record<string, unknown>; generate: boolean } | undefined;
  private idle: NodeJS.Timeout | undefined;
  private pinger: NodeJS.Timeout | undefined;
  private draining = false;

  constructor(options: SocketConnectionOptions) {
    const { edge, socket } = options;
    this.socket = socket;
    this.edge = edge;
    // Each response gets its own request id (the ledger's key): the upgrade's x-request-id is not reused.
    const { 'x-request-id': _id, 'content-length': _length, ...headers } = options.upgrade.headers;
    this.headers = headers;
    this.route = responsesInferenceRoute(guardedStore(options.store, edge.logger), edge, {
      dialect: SOCKET_DIALECT,
      recent: {
        get: (id) => (this.recent?.id === id ? this.recent : undefined),
        set: (record) => (this.recent = record),
      },
    });
    this.handler = inferenceHandler(this.route, edge);
    this.context = requestContext(edge.logger);
    this.check = keyCheck(edge);
    socket.on('message', (data, isBinary) => this.onMessage(data, isBinary));
    socket.on('error', (error) => edge.logger.debug({ err: error }, 'websocket error'));
    socket.once('close', () => {
      clearTimeout(this.idle);
      clearInterval(this.pinger);
      this.current?.socketClosed();
      options.onClosed();
    });
    this.armIdle();
    this.startPings(edge.config.websocket.pingIntervalMs);
  }

  /**
   * Pings every `intervalMs`; a peer that did not answer the last ping (RFC 6455 §5.5.2, §5.5.3) is gone: terminated.
   */
  private startPings(intervalMs: number): void {
    if (intervalMs === 0) return;
    let answered = true;
    this.socket.on('pong', () => (answered = true));
    this.pinger = setInterval(() => {
      if (!answered) {
        this.edge.logger.info({ pingIntervalMs: intervalMs }, 'websocket peer did not answer a ping: terminated');
        this.socket.terminate();
        return;
      }
      answered = false;
      this.socket.ping();
    }, intervalMs);
    this.pinger.unref();
  }

  /** Closes the connection after the current response (edge shutdown): 1001 "going away". */
  drain(): void {
    this.draining = true;
    if (this.current === undefined) this.socket.close(1001, 'the edge is shutting down');
  }

  /** Destroys the socket at once (after the shutdown deadline). */
  terminate(): void {
    this.socket.terminate();
  }

  private onMessage(data: RawData, isBinary: boolean): void {
    clearTimeout(this.idle);
    try {
      const event = parseClientEvent(data, isBinary);
      if (event.type === 'response.processed') return;
      if (this.draining) throw new IopError('no_capacity', 'the edge is shutting down: open a new connection');
      if (this.current === undefined) return this.serve(event.body, event.generate);
      if (!this.current.terminalSent || this.next !== undefined)
        throw new IopError(
          'conflict',
          'a response is already running on this connection: send the next response.create after its terminal event',
        );
      this.next = { body: event.body, generate: event.generate };
    } catch (error) {
      this.sendError(
        error instanceof IopError ? error : new IopError('invalid_request', 'the message could not be read'),
      );
    } finally {
      if (this.current === undefined) this.armIdle();
    }
  }

  /** Runs one response through the request context, the key check and then the pipeline (or the warm-up). */
  private serve(body: Record<string, unknown>, generate: boolean): void {
    const res = new SocketResponse(this.socket, WRITE_HIGH_WATER_MARK);
    const req = this.request(Buffer.from(JSON.stringify(body)));
    const onError = (error: unknown) => this.fail(error, req, res as unknown as Response, onError);
    this.current = res;
    res.once('close', () => {
      this.current = undefined;
      const next = this.next;
      this.next = undefined;
      if (this.draining) this.socket.close(1001, 'the edge is shutting down');
      else if (next !== undefined && this.socket.readyState === this.socket.OPEN) this.serve(next.body, next.generate);
      else this.armIdle();
    });
    const expressRes = res as unknown as Response;
    void this.context(req, expressRes, () => {
      void this.check(req, expressRes, (error?: unknown) => {
        if (error !== undefined) return onError(error);
        if (res.destroyed) return; // the socket closed during the key check: nothing to run
        if (generate) {
          void this.handler(req, expressRes, (later?: unknown) => {
            if (later !== undefined) onError(later);
          });
          return;
        }
        this.warmUp(body, expressRes).catch(onError);
      });
    });
  }

  /**
   * `generate: false`: the request is decoded and the key's model permission checked (403); no model runs, nothing is
   * billed; the response completes empty.
   */
  private async warmUp(body: Record<string, unknown>, res: Response): Promise<void> {
    const context = locals(res);
    let request = responsesDialect.decodeRequest(body);
    const record = context.identity?.record;
    if (record !== undefined && !modelAllowed(record, [request.model, this.edge.knownModel(request.model)]))
      throw new IopError('permission', `this API key may not use the model ${JSON.stringify(request.model)}`);
    request = (await this.route.prepare?.(request, body, context)) ?? request;
    const encoder = createResponsesLinesEncoder({
      requestId: context.requestId,
      model: request.model,
      request,
      createdAt: Math.floor(Date.now() / 1000),
    });
    const events: StreamEvent[] = [
      { type: 'usage', usage: { inputTokens: 0, outputTokens: 0 } },
      { type: 'finish', reason: 'stop', raw: null },
    ];
    let text = '';
    for (const event of events) text += encoder.push(event);
    text += encoder.end();
    const result = encoder.result() as ResponseObject;
    await this.route.onResult?.(result, request, body, context);
    res.end(text);
    context.log.info({ responseId: result.id, model: request.model }, 'websocket warm-up answered (generate: false)');
  }

  /** What the pipeline reads of a request: the upgrade's headers, the path, the body. */
  private request(body: Buffer): Request {
    const headers = this.headers;
    const get = (name: string) => {
      const value = headers[name.toLowerCase()];
      return Array.isArray(value) ? value.join(', ') : value;
    };
    return {
      headers,
      method: 'POST',
      url: '/v1/responses',
      path: '/v1/responses',
      originalUrl: '/v1/responses',
      body,
      get,
    } as unknown as Request;
  }

  private sendError(error: IopError): void {
    if (this.socket.readyState !== this.socket.OPEN) return;
    const rendered = responsesDialect.errorResponse(error, '');
    this.socket.send(JSON.stringify(errorEvent(rendered.status, rendered.body)));
  }

  private armIdle(): void {
    clearTimeout(this.idle);
    const idleTimeoutMs = this.edge.config.websocket.idleTimeoutMs;
    this.idle = setTimeout(() => {
      this.edge.logger.info({ idleTimeoutMs }, 'websocket idle: closed');
      this.socket.close(1000, 'idle timeout');
    }, idleTimeoutMs);
    this.idle.unref();
  }
}
