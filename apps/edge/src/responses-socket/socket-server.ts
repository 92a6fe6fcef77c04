/**
 * Responses over a WebSocket on the edge's HTTP server (docs/protocols.md "Responses over
 * WebSocket", handshake): `GET /v1/responses` with `Upgrade: websocket` (the `ws` package,
 * RFC 6455), handled on the server's 'upgrade' event. Everything that can refuse a connection
 * does so before switching protocols, as a plain HTTP response with the Responses error envelope
 * `{error:{message,type,param,code}}`:
 *
 * - another path: 404; the mode turned off (`websocket.enabled: false`): 426, on which Codex CLI
 *   uses HTTP for the session; the edge shutting down: 503;
 * - the key (`Authorization: Bearer`, the same check as every `/v1` request): 401;
 * - `websocket.maxConnectionsPerKey` open for the key: 429 `rate_limited` (not on an open edge,
 *   whose clients have no key); `websocket.maxConnections` open on the edge: 503 `no_capacity`.
 *
 * Clients' `OpenAI-Beta: responses_websockets=…` header (Codex CLI) is accepted, not required.
 * Messages over `websocket.maxMessageBytes` close the connection with 1009 (`ws` `maxPayload`).
 * permessage-deflate is declined (RFC 7692 lets the server decline): events are small and
 * compressing each costs the edge CPU and memory per connection.
 */
import { STATUS_CODES, type IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Request, Response } from 'express';
import { WebSocketServer } from 'ws';
import { IopError, newId } from '@iop/core';
import type { EdgeContext } from '../edge-context.js';
import { responsesDialect } from '../dialects.js';
import { keyCheck, OPEN_IDENTITY } from '../http/key-check.js';
import type { RequestLocals } from '../http/request-context.js';
import type { ResponseStore } from '../responses-store/index.js';
import { SocketConnection } from './socket-connection.js';

export const RESPONSES_SOCKET_PATH = '/v1/responses';

export class ResponsesSocketServer {
  private readonly server: WebSocketServer;
  private readonly check: ReturnType<typeof keyCheck>;
  private readonly open = new Set<SocketConnection>();
  private readonly perKey = new Map<string, number>();
  private closing = false;

  constructor(
    private readonly edge: EdgeContext,
    private readonly store: ResponseStore,
  ) {
    this.server = new WebSocketServer({
      noServer: true,
      clientTracking: false,
      perMessageDeflate: false,
      maxPayload: edge.config.websocket.maxMessageBytes,
    });
    this.check = keyCheck(edge);
  }

  /** Open connections. */
  get size(): number {
    return this.open.size;
  }

  /** The HTTP server's 'upgrade' listener: refuses with an HTTP error, or opens a connection. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on('error', () => socket.destroy());
    void this.upgrade(req, socket, head).catch((error: unknown) => {
      this.edge.logger.error({ err: error }, 'websocket upgrade failed');
      this.refuse(socket, new IopError('internal', 'the WebSocket upgrade failed'));
    });
  }

  /** Edge shutdown: new upgrades get 503; each connection closes (1001) after its current response. */
  drain(): void {
    this.closing = true;
    for (const connection of this.open) connection.drain();
  }

  /** Ends the connections still open (after the shutdown deadline): their sockets are destroyed. */
  terminate(): void {
    for (const connection of this.open) connection.terminate();
  }

  private async upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const path = (req.url ?? '').split('?', 1)[0];
    const config = this.edge.config.websocket;
    if (path !== RESPONSES_SOCKET_PATH)
      return this.refuse(
        socket,
        new IopError(
          'not_found',
          `no WebSocket endpoint at ${path}; Responses over WebSocket is ${RESPONSES_SOCKET_PATH}`,
        ),
      );
    if (!config.enabled)
      return this.refuse(
        socket,
        new IopError('invalid_request', 'WebSockets are turned off on this edge: use POST /v1/responses'),
        426,
      );
    if (this.closing)
      return this.refuse(socket, new IopError('no_capacity', 'the edge is shutting down', { retryAfterSeconds: 1 }));
    const context = await this.keyOf(req);
    if (context instanceof IopError) return this.refuse(socket, context);
    if (this.closing)
      return this.refuse(socket, new IopError('no_capacity', 'the edge is shutting down', { retryAfterSeconds: 1 }));
    // An open edge (no keys) has no per-key cap: every client would share one.
    const keyId = context.identity?.keyId ?? OPEN_IDENTITY.keyId;
    if (keyId !== OPEN_IDENTITY.keyId && (this.perKey.get(keyId) ?? 0) >= config.maxConnectionsPerKey)
      return this.refuse(
        socket,
        new IopError(
          'rate_limited',
          `this key has ${config.maxConnectionsPerKey} WebSocket connections open, the most it may`,
          { retryAfterSeconds: 1 },
        ),
      );
    if (this.open.size >= config.maxConnections)
      return this.refuse(
        socket,
        new IopError(
          'no_capacity',
          `the edge has ${config.maxConnections} WebSocket connections open, the most it takes`,
          { retryAfterSeconds: 1 },
        ),
      );
    // Counted in handleUpgrade's callback, which `ws` calls synchronously (no verifyClient): no
    // other upgrade passes the checks above in between.
    this.server.handleUpgrade(req, socket, head, (ws) => {
      const connection = new SocketConnection({
        edge: this.edge,
        store: this.store,
        socket: ws,
        upgrade: req,
        onClosed: () => {
          this.open.delete(connection);
          const left = (this.perKey.get(keyId) ?? 1) - 1;
          if (left > 0) this.perKey.set(keyId, left);
          else this.perKey.delete(keyId);
          this.edge.metrics.websocketConnections.set(this.open.size);
        },
      });
      this.open.add(connection);
      this.perKey.set(keyId, (this.perKey.get(keyId) ?? 0) + 1);
      this.edge.metrics.websocketConnections.set(this.open.size);
      this.edge.logger.debug({ keyId, open: this.open.size }, 'websocket opened');
      if (this.closing) connection.drain();
    });
  }

  /** The key check of every `/v1` request (http/key-check.ts) on the upgrade request. */
  private keyOf(req: IncomingMessage): Promise<RequestLocals | IopError> {
    const res = { locals: {} as RequestLocals, headersSent: false } as unknown as Response;
    return new Promise((resolve) => {
      void this.check(req as Request, res, (error?: unknown) => {
        if (error === undefined) resolve(res.locals as RequestLocals);
        else resolve(error instanceof IopError ? error : new IopError('internal', 'the API key could not be checked'));
      });
    });
  }

  /** Answers the upgrade with an HTTP error in the Responses envelope and closes the socket. */
  private refuse(socket: Duplex, error: IopError, status?: number): void {
    if (!socket.writable) return void socket.destroy();
    const requestId = newId('req_');
    const rendered = responsesDialect.errorResponse(error, requestId);
    const code = status ?? rendered.status;
    this.edge.metrics.websocketRefusals.inc({ status: String(code) });
    this.edge.logger.info(
      { status: code, code: error.code, error: error.message, requestId },
      'websocket upgrade refused',
    );
    const body = JSON.stringify(rendered.body);
    const headers = {
      ...rendered.headers,
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(body)),
      connection: 'close',
    };
    const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}`);
    socket.end(`HTTP/1.1 ${code} ${STATUS_CODES[code] ?? 'Error'}\r\n${lines.join('\r\n')}\r\n\r\n${body}`);
  }
}
