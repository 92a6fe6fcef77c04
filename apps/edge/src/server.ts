/**
 * Starts the edge: the HTTP API (express on node:http, with Responses over WebSocket on its
 * 'upgrade' event) and the tunnel (connect-node on HTTP/2 —
 * h2c, or TLS when a certificate is configured). `close()` stops accepting, lets in-flight streams
 * finish up to a deadline, then ends what is left with an in-band error in the client's dialect.
 * `reload()` applies a new config's reloadable settings (admin/config-reload.ts).
 */
import http from 'node:http';
import type { Express } from 'express';
import type http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { connectNodeAdapter } from '@connectrpc/connect-node';
import type { EdgeConfig } from './config.js';
import type { EdgeContext } from './edge-context.js';
import { createLogger, type Logger } from './logger.js';
import { EdgeMetrics } from './metrics.js';
import { agentCounts, tunnelFrameCounters } from './edge-observers.js';
import { AgentRegistry } from './tunnel/agent-registry.js';
import { ProviderPool } from './pool/provider-pool.js';
import { RunRegistry } from './tunnel/run-registry.js';
import { controlHandler, tunnelRoutes } from './tunnel/tunnel-service.js';
import { createTunnelServer } from './tunnel/tunnel-server.js';
import { ConnectionGuard } from './tunnel/connection-guard.js';
import { TUNNEL_CONNECTION } from './tunnel/agent-identity.js';
import { createContextValues } from '@connectrpc/connect';
import { createApp } from './http/app.js';
import { expressServerClasses, withInferenceFastPath } from './http/fast-path.js';
import { buildDialectRoutes } from './routes.js';
import { EDGE_VERSION } from './version.js';
import { GateRegistry, policyLabel } from './gate/gate-registry.js';
import { openSharedState } from './shared-state.js';
import { GateMetrics, createGateSink } from './gate/gate-sink.js';
import { ConfigError } from './config.js';
import { IopError, sleep } from '@iop/core';
import { RunErrorCode } from '@iop/proto';
import { applyConfigReload, mountAdmin, type ReloadResult } from './admin/index.js';
import { recordsOfConfigKeys } from './keys/config-keys.js';
import { ConsoleSessions } from './console/console-sessions.js';
import { mountConsole } from './console/console-routes.js';
import { InFlightRequests } from './telemetry/in-flight-requests.js';
import { BodyBudget } from './limits/body-budget.js';
import { ResponsesSocketServer } from './responses-socket/socket-server.js';

export interface RunningEdge {
  /** The HTTP API port actually bound. */
  port: number;
  /** The tunnel port actually bound. */
  tunnelPort: number;
  context: EdgeContext;
  /**
   * Graceful stop: the HTTP port stops accepting at once; in-flight requests may finish up to
   * `deadlineMs` (default the config's `shutdownDeadlineMs`); runs still open then end with an
   * ERROR (`edge_shutdown`), which each response renders in its dialect, and the rest is closed.
   */
  close(deadlineMs?: number): Promise<void>;
  /**
   * Applies a new config's reloadable settings (see admin/config-reload.ts).
   * @throws ConfigError when the new gate or pool section is invalid; nothing is changed then.
   */
  reload(next: EdgeConfig): ReloadResult;
}

/**
 * Listens; resolves with the bound port.
 * @throws ConfigError naming the address and the flag to change when the port is taken or not allowed.
 */
/** Largest message the edge reads through Connect, bytes. */
const CONNECT_READ_MAX_BYTES = 1024 * 1024;

function listen(server: http.Server | http2.Http2Server, port: number, host: string, flag: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException) => {
      if (error.code === 'EADDRINUSE')
        reject(
          new ConfigError(
            `cannot listen on ${host}:${port}: the address is in use by another process; choose another with ${flag}`,
          ),
        );
      else if (error.code === 'EACCES')
        reject(
          new ConfigError(
            `cannot listen on ${host}:${port}: permission denied (ports below 1024 need privileges); choose another with ${flag}`,
          ),
        );
      else if (error.code === 'EADDRNOTAVAIL')
        reject(new ConfigError(`cannot listen on ${host}:${port}: no such local address; check the host setting`));
      else reject(error);
    };
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

export async function startEdge(
  config: EdgeConfig,
  logger: Logger = createLogger(config.logLevel, undefined, config.logFormat),
): Promise<RunningEdge> {
  const registry = new AgentRegistry();
  const metrics = new EdgeMetrics({ keyLabels: config.metrics.keyLabels });
  const runs = new RunRegistry();
  const pool = new ProviderPool({
    config: config.pool,
    registry,
    runs,
    metrics: metrics.registry,
    logger,
    startupGraceMs: config.startupGraceMs,
  });
  const knownModel = (model: string) => {
    const resolved = pool.resolver.resolveModel(model);
    if (!resolved.implicit) return resolved.group.name;
    return registry.forModel(model).length > 0 ? model : 'unknown';
  };
  // Reads the gates in use at the time of the attempt (set below, replaced on a config reload).
  const gateSink = createGateSink(new GateMetrics(metrics), metrics, logger, knownModel, (model) =>
    policyLabel(context.gates.policyOf(model)),
  );
  const buildGates = (section: EdgeConfig['gate']): GateRegistry => {
    try {
      return new GateRegistry(section, gateSink);
    } catch (error) {
      if (error instanceof IopError) throw new ConfigError(`invalid gate config: ${error.message}`);
      throw error;
    }
  };
  metrics.observeAgents(() => agentCounts(registry.all(), pool.snapshot()));
  const context: EdgeContext = {
    config,
    registry,
    runs,
    metrics,
    logger,
    gates: buildGates(config.gate),
    pool,
    poolSnapshot: () => pool.snapshot(),
    knownModel,
    requests: new InFlightRequests(),
    bodyBudget: new BodyBudget(config.maxRequestBytesInFlight, metrics.registry),
  };
  if (config.apiKeys.length === 0) logger.warn('no API keys configured: the HTTP API accepts every request');
  if (config.joinTokens.length === 0) logger.warn('no join tokens configured: any agent may join the pool');

  const state = await openSharedState(config, logger, metrics.registry);
  context.state = state;
  const store = state.responses;
  const routes = buildDialectRoutes(context, store);
  // One session store for the console's login and the admin API's cookie check.
  const consoleSessions = new ConsoleSessions(() => context.config.consoleSessionTtlMs);
  const allRoutes = {
    ...routes,
    extra: [
      ...routes.extra,
      (app: Express, edge: EdgeContext) => mountConsole(app, edge, consoleSessions),
      (app: Express, edge: EdgeContext) => mountAdmin(app, edge, consoleSessions),
    ],
  };
  const app = createApp(context, allRoutes);
  // requestTimeout bounds how long a client may take to send a whole request (slow bodies), ms.
  const httpServer = http.createServer(
    {
      keepAliveTimeout: 65_000,
      noDelay: true,
      // The inference bodies' own clock (bodyTimeoutMs, a 408 in the dialect) runs out first.
      requestTimeout: Math.max(120_000, config.bodyTimeoutMs + 35_000),
      headersTimeout: 30_000,
      ...expressServerClasses(app),
    },
    withInferenceFastPath(app, context, allRoutes),
  );
  // Responses over WebSocket on the same port and path (responses-socket/).
  const sockets = new ResponsesSocketServer(context, store);
  httpServer.on('upgrade', (req, socket, head) => sockets.handleUpgrade(req, socket, head));
  httpServer.on('clientError', (error: NodeJS.ErrnoException, socket) => {
    // Requests Node rejects before express sees them (bad header bytes, headers too large) still
    // get a JSON error body instead of an empty one.
    if (!socket.writable) return socket.destroy();
    const { status, reason, message } = clientErrorOf(error.code);
    const body = JSON.stringify({
      error: { message, type: 'invalid_request_error', param: null, code: status === 408 ? 'request_timeout' : null },
    });
    socket.end(
      `HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
  });

  const guard = new ConnectionGuard({ ...config.tunnel.unauthenticated, metrics: metrics.registry, logger });
  const tunnelCounters = tunnelFrameCounters(metrics);
  const control = controlHandler({
    registry: context.registry,
    residency: context.pool.residency,
    runs: context.runs,
    joinTokens: () => context.config.joinTokens,
    heartbeatIntervalMs: config.heartbeatIntervalMs,
    registerTimeoutMs: config.tunnel.unauthenticated.registerTimeoutMs,
    admitting: () => pool.admitting,
    guard,
    edgeVersion: EDGE_VERSION,
    logger,
  });
  const adapter = connectNodeAdapter({
    routes: tunnelRoutes(control),
    contextValues: (req) =>
      createContextValues().set(TUNNEL_CONNECTION, (req as http2.Http2ServerRequest).stream?.session),
    // What the edge reads through Connect: Control messages (Register, Heartbeat: small; read
    // whole before the join token can be checked, so kept small). gRPC calls take the raw handlers.
    readMaxBytes: CONNECT_READ_MAX_BYTES,
    writeMaxBytes: config.maxBodyBytes + 1024 * 1024,
  });
  const tls = config.tunnel.tlsCertFile !== undefined && config.tunnel.tlsKeyFile !== undefined;
  const tunnelServer = createTunnelServer({
    tls: tls ? { certFile: config.tunnel.tlsCertFile!, keyFile: config.tunnel.tlsKeyFile! } : undefined,
    guard,
    registry: context.registry,
    runs: context.runs,
    control,
    controlMaxMessageBytes: CONNECT_READ_MAX_BYTES,
    maxBodyBytes: config.maxBodyBytes,
    fallback: adapter,
    counters: tunnelCounters,
  });
  guard.attach(tunnelServer);

  const port = await listen(httpServer, config.port, config.host, '--port / IOP_PORT');
  const tunnelPort = await listen(
    tunnelServer,
    config.tunnel.port,
    config.tunnel.host,
    '--tunnel-port / IOP_TUNNEL_PORT',
  );
  logger.info(
    { port, tunnelPort, host: config.host, tunnelHost: config.tunnel.host, tls, version: EDGE_VERSION },
    'edge listening',
  );

  let closing: Promise<void> | undefined;
  const close = (deadlineMs = context.config.shutdownDeadlineMs) => {
    closing ??= (async () => {
      logger.info({ deadlineMs, inFlightRuns: context.runs.size }, 'edge shutting down');
      // Queued and later requests get a 503 now (clients retry elsewhere); running ones finish.
      pool.stopAdmitting();
      // WebSockets close (1001) after their current response; the HTTP server's close waits for them.
      sockets.drain();
      let httpDone = false;
      const httpClosed = new Promise<void>((resolve) => httpServer.close(() => resolve())).then(
        () => (httpDone = true),
      );
      // Keep-alive connections become idle as their last response ends: close them as they do.
      httpServer.closeIdleConnections();
      const idleSweep = setInterval(() => httpServer.closeIdleConnections(), 50);
      const waited = new AbortController();
      await Promise.race([httpClosed, sleep(deadlineMs, waited.signal)]);
      waited.abort();
      if (!httpDone) {
        const ended = context.runs.failAll(RunErrorCode.EDGE_SHUTDOWN, 'the edge is shutting down');
        logger.warn({ runs: ended, deadlineMs }, 'shutdown deadline passed: ending the runs left with an error');
        await Promise.race([httpClosed, sleep(1_000, undefined, { unref: true })]);
      }
      clearInterval(idleSweep);
      httpServer.closeAllConnections();
      sockets.terminate();
      for (const session of context.registry.all()) session.close();
      await Promise.race([
        new Promise<void>((resolve) => tunnelServer.close(() => resolve())),
        sleep(1_000, undefined, { unref: true }),
      ]);
      await state.close(5_000);
      await pool.close();
    })();
    return closing;
  };
  const reload = (next: EdgeConfig): ReloadResult => {
    const keys = recordsOfConfigKeys(next.keys); // throws ConfigError before anything changes
    const result = applyConfigReload(context, next, buildGates);
    state.keys.setConfigKeys(keys);
    return result;
  };
  return { port, tunnelPort, context, close, reload };
}

/**
 * The answer to a request Node refused before express saw it: headers too large, too slow (Node's `requestTimeout`), or
 * malformed.
 */
function clientErrorOf(code: string | undefined): { status: number; reason: string; message: string } {
  if (code === 'HPE_HEADER_OVERFLOW')
    return { status: 431, reason: 'Request Header Fields Too Large', message: 'request headers too large' };
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT')
    return { status: 408, reason: 'Request Timeout', message: 'the request did not arrive in time' };
  return { status: 400, reason: 'Bad Request', message: 'malformed HTTP request' };
}
