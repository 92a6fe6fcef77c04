/**
 * The tunnel port's HTTP/2 server. gRPC `Run` and `Control` calls — a stream per run, an
 * assignment per run — are served on the raw `ServerHttp2Stream` (run-stream-handler.ts,
 * control-stream-handler.ts); every other stream (Control in the Connect or gRPC-Web protocol,
 * anything unknown) goes through Node's compatibility API to connect-node's adapter.
 *
 * Why not one request handler for all: Node's compatibility layer wraps each stream in an
 * `Http2ServerRequest` and an `Http2ServerResponse` (two stream objects and their listeners) before
 * emitting `request`, which cost the edge a few percent per run for calls that only need the
 * stream. That layer is itself a listener of the server's `stream` event (Node docs, "Compatibility
 * API": it is installed with the `request` listener); its listeners are moved behind one
 * dispatcher that takes the hot calls first and hands it every other stream unchanged.
 *
 * Every stream, hot or not, passes the connection guard first (caps on unauthenticated peers).
 */
import http2, { type IncomingHttpHeaders, type ServerHttp2Stream } from 'node:http2';
import { readFileSync } from 'node:fs';
import { ConfigError } from '@iop/core';
import { RUN_SESSION_HEADER } from '@iop/proto';
import type { TunnelCounters } from '../edge-observers.js';
import type { AgentRegistry } from './agent-registry.js';
import type { ConnectionGuard } from './connection-guard.js';
import { handleControlStream, isGrpcControl } from './control-stream-handler.js';
import type { RunRegistry } from './run-registry.js';
import { handleRunStream, isGrpcRun } from './run-stream-handler.js';
import type { ControlHandler } from './tunnel-service.js';

export interface TunnelServerOptions {
  /** PEM files; plain HTTP/2 (h2c) without them. */
  tls?: { certFile: string; keyFile: string } | undefined;
  guard: ConnectionGuard;
  registry: AgentRegistry;
  runs: RunRegistry;
  control: ControlHandler;
  /** Largest Control message read, bytes. */
  controlMaxMessageBytes: number;
  /** Largest request body (`maxBodyBytes`): an assignment carries one, so the sessions are sized for it. */
  maxBodyBytes: number;
  /** Serves every stream that is not a gRPC Run or Control call (connect-node's adapter). */
  fallback: (req: http2.Http2ServerRequest, res: http2.Http2ServerResponse) => void;
  counters?: TunnelCounters | undefined;
}

const ignore = () => undefined;

/**
 * Reads one of the tunnel's PEM files.
 * @throws ConfigError naming the file, its setting and why it cannot be read (the edge prints it and exits 1).
 */
function readPem(
  file: string,
  setting: 'tunnel.tlsCertFile (--tls-cert, IOP_TLS_CERT)' | 'tunnel.tlsKeyFile (--tls-key, IOP_TLS_KEY)',
): Buffer {
  try {
    return readFileSync(file);
  } catch (error) {
    throw new ConfigError(`cannot read ${setting} ${file}: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/**
 * The tunnel sessions' memory limit (Node's `maxSessionMemory`, in MB), sized for the body
 * limit: Node counts a session's unsent bytes and nghttp2's buffers against it and, past it,
 * refuses every new stream with ENHANCE_YOUR_CALM — with its 10 MB default one 15 MB assignment
 * in flight made the edge refuse the run's own Run call. Two bodies at the limit (an assignment
 * written whole by the Connect-protocol Control path, plus one being read) and 16 MB of headroom:
 * 80 MB for the 32 MiB default. A limit, not an allocation; the raw gRPC Control path writes
 * large assignments in slices (control-stream-handler.ts), so it holds far less.
 */
export function tunnelSessionMemoryMb(maxBodyBytes: number): number {
  return Math.max(10, 2 * Math.ceil(maxBodyBytes / (1024 * 1024)) + 16);
}

export function createTunnelServer(options: TunnelServerOptions): http2.Http2Server | http2.Http2SecureServer {
  const { guard, registry, runs } = options;
  const fallback = (req: http2.Http2ServerRequest, res: http2.Http2ServerResponse) => {
    if (guard.admitStream(req.stream.session, req.stream)) options.fallback(req, res);
  };
  const sessionOptions = { maxSessionMemory: tunnelSessionMemoryMb(options.maxBodyBytes) };
  const server =
    options.tls === undefined
      ? http2.createServer(sessionOptions, fallback)
      : http2.createSecureServer(
          {
            ...sessionOptions,
            cert: readPem(options.tls.certFile, 'tunnel.tlsCertFile (--tls-cert, IOP_TLS_CERT)'),
            key: readPem(options.tls.keyFile, 'tunnel.tlsKeyFile (--tls-key, IOP_TLS_KEY)'),
            ...guard.tlsOptions(),
          },
          fallback,
        );

  /** Serves `stream` when it is a gRPC Run or Control call; false for any other stream. */
  const serveHot = (stream: ServerHttp2Stream, headers: IncomingHttpHeaders): boolean => {
    const path = headers[':path'];
    const run = isGrpcRun(path, headers);
    if (!run && !isGrpcControl(path, headers)) return false;
    // A stream reset by either side emits 'error'; the handlers watch 'close' and 'aborted', and a
    // refused stream has no handler at all: without a listener the error would end the process.
    stream.on('error', ignore);
    const connection = stream.session;
    if (!guard.admitStream(connection, stream)) return true;
    if (run) {
      const sessionId = headers[RUN_SESSION_HEADER];
      if (typeof sessionId === 'string' && registry.bySessionId(sessionId) !== undefined)
        guard.authenticate(connection);
      handleRunStream(stream, headers, runs, (id) => registry.bySessionId(id), options.counters);
    } else handleControlStream(stream, options.control, options.controlMaxMessageBytes);
    return true;
  };

  const compatibility = server.listeners('stream') as Array<(...args: unknown[]) => void>;
  server.removeAllListeners('stream');
  server.on(
    'stream',
    function dispatch(this: unknown, stream: ServerHttp2Stream, headers: IncomingHttpHeaders, ...rest: unknown[]) {
      if (serveHot(stream, headers)) return;
      for (const listener of compatibility) Reflect.apply(listener, this, [stream, headers, ...rest]);
    },
  );
  return server;
}
