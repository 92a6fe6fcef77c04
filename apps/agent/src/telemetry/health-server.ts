/**
 * The agent's own HTTP port for probes and scrapers (node:http, no framework):
 *
 * - `GET /healthz` → 200 `{"status":"ok"}` while the process runs;
 * - `GET /readyz` → 200 `{"status":"ready",…}` while registered with at least one edge and not
 *   draining, else 503 with the reason (`not registered with any edge`, `draining`); the body
 *   lists each edge with `registered`;
 * - `GET /metrics` → Prometheus text (agent-metrics.ts);
 * - anything else → 404, another method → 405.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { AgentMetrics, AgentState } from './agent-metrics.js';

export interface HealthServer {
  /** The port bound. */
  readonly port: number;
  close(): Promise<void>;
}

function json(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/**
 * Listens on `host:port` (0 = any free port).
 * @throws Error naming the address and `--metrics-port` when the port is taken or not allowed.
 */
export async function startHealthServer(
  host: string,
  port: number,
  metrics: AgentMetrics,
  state: AgentState,
): Promise<HealthServer> {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/healthz' && path !== '/readyz' && path !== '/metrics')
      return json(res, 404, { error: `no route for ${path}; try /healthz, /readyz or /metrics` });
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('allow', 'GET, HEAD');
      return json(res, 405, { error: `${req.method} is not allowed on ${path}; use GET` });
    }
    if (path === '/healthz') return json(res, 200, { status: 'ok' });
    if (path === '/readyz') {
      const edges = state.edges();
      const registered = edges.some((edge) => edge.registered);
      const draining = state.draining();
      const status = draining ? 'draining' : registered ? 'ready' : 'not registered with any edge';
      return json(res, registered && !draining ? 200 : 503, { status, edges, inFlight: state.inFlight() });
    }
    metrics.registry.metrics().then(
      (text) => {
        res.writeHead(200, { 'content-type': metrics.registry.contentType });
        res.end(text);
      },
      (error: unknown) => json(res, 500, { error: error instanceof Error ? error.message : String(error) }),
    );
  });
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => {
      const reason =
        error.code === 'EADDRINUSE'
          ? 'the address is in use by another process'
          : error.code === 'EACCES'
            ? 'permission denied'
            : error.message;
      reject(
        new Error(
          `cannot listen on ${host}:${port} for /healthz and /metrics: ${reason}; choose another with --metrics-port (IOP_METRICS_PORT) or turn it off with --metrics-port off`,
        ),
      );
    });
    server.listen(port, host, () => resolve());
  });
  server.unref();
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
