/**
 * Bounds what the tunnel port gives a peer that has not proved itself. An HTTP/2 connection is
 * unauthenticated until a Control stream on it registers with a valid join token, or a Run call on
 * it carries the session id of a connected Control session. Until then:
 *
 * - at most `maxUnauthenticatedConnections` such connections exist at once; a further one is
 *   closed at once (GOAWAY `ENHANCE_YOUR_CALM`, then destroyed);
 * - each may have at most `maxUnauthenticatedStreams` open streams; a further stream is reset
 *   with `REFUSED_STREAM` (RFC 9113 §8.7: the client may retry it, nothing was processed);
 * - it is closed when it has not authenticated within `registerTimeoutMs` of being accepted.
 *
 * So an anonymous peer holds at most connections × streams of small state for at most the
 * registration deadline, whatever it opens. Authenticated connections (agents) are not limited
 * here: they carry one stream per run. With TLS, the handshake itself is bounded by the server's
 * `handshakeTimeout` (set to the same deadline in server.ts).
 */
import { constants, type Http2Server, type Http2Session, type SecureServerOptions } from 'node:http2';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { Logger } from 'pino';

export interface ConnectionGuardOptions {
  /** Time a connection has to authenticate, ms. */
  registerTimeoutMs: number;
  /** Unauthenticated connections open at once. */
  maxUnauthenticatedConnections: number;
  /** Open streams per unauthenticated connection. */
  maxUnauthenticatedStreams: number;
  metrics: Registry;
  logger: Logger;
}

interface PendingConnection {
  timer: NodeJS.Timeout;
  openStreams: number;
}

export class ConnectionGuard {
  private readonly pending = new Map<Http2Session, PendingConnection>();
  private readonly refused: Counter<'reason'>;

  constructor(private readonly options: ConnectionGuardOptions) {
    const { metrics } = options;
    const pending = this.pending;
    new Gauge({
      name: 'iop_tunnel_unauthenticated_connections',
      help: 'Tunnel connections that have not registered an agent yet.',
      registers: [metrics],
      // Read at scrape time: the map is the truth.
      collect() {
        this.set(pending.size);
      },
    });
    this.refused = new Counter({
      name: 'iop_tunnel_refused_total',
      help: 'Unauthenticated tunnel connections and streams refused: reason="connections" (over the connection cap), "streams" (over the per-connection stream cap), "register_timeout" (closed at the registration deadline).',
      labelNames: ['reason'] as const,
      registers: [metrics],
    });
  }

  /** Options for `http2.createSecureServer`: the TLS handshake counts against the registration deadline. */
  tlsOptions(): Pick<SecureServerOptions, 'handshakeTimeout'> {
    return { handshakeTimeout: this.options.registerTimeoutMs };
  }

  /** Watches every connection of `server`. */
  attach(server: Http2Server): void {
    server.on('session', (session: Http2Session) => this.onConnection(session));
  }

  /** Unauthenticated connections open now. */
  get unauthenticatedConnections(): number {
    return this.pending.size;
  }

  /** Marks `session`'s connection as an agent's: no cap or deadline applies to it any more. */
  authenticate(session: Http2Session | undefined): void {
    if (session === undefined) return;
    const entry = this.pending.get(session);
    if (entry === undefined) return;
    clearTimeout(entry.timer);
    this.pending.delete(session);
  }

  /**
   * Call for each new stream before handling it. Returns false when the stream was refused
   * (reset with REFUSED_STREAM); the caller must not handle it then.
   */
  admitStream(
    session: Http2Session | undefined,
    stream: { close(code: number): void; once(event: 'close', listener: () => void): unknown },
  ): boolean {
    if (session === undefined) return true;
    const entry = this.pending.get(session);
    if (entry === undefined) return true;
    if (entry.openStreams >= this.options.maxUnauthenticatedStreams) {
      this.refused.inc({ reason: 'streams' });
      stream.close(constants.NGHTTP2_REFUSED_STREAM);
      return false;
    }
    entry.openStreams++;
    stream.once('close', () => {
      entry.openStreams--;
    });
    return true;
  }

  private onConnection(session: Http2Session): void {
    const { maxUnauthenticatedConnections, registerTimeoutMs, logger } = this.options;
    if (this.pending.size >= maxUnauthenticatedConnections) {
      this.refused.inc({ reason: 'connections' });
      logger.debug(
        { remote: session.socket?.remoteAddress, limit: maxUnauthenticatedConnections },
        'tunnel connection refused: too many unauthenticated connections',
      );
      session.goaway(constants.NGHTTP2_ENHANCE_YOUR_CALM);
      session.destroy();
      return;
    }
    const timer = setTimeout(() => {
      if (!this.pending.has(session)) return;
      this.pending.delete(session);
      this.refused.inc({ reason: 'register_timeout' });
      logger.info(
        { remote: session.socket?.remoteAddress, registerTimeoutMs },
        'tunnel connection closed: no agent registered on it in time',
      );
      session.goaway(constants.NGHTTP2_CANCEL);
      session.destroy();
    }, registerTimeoutMs);
    timer.unref();
    this.pending.set(session, { timer, openStreams: 0 });
    session.once('close', () => {
      const entry = this.pending.get(session);
      if (entry === undefined) return;
      clearTimeout(entry.timer);
      this.pending.delete(session);
    });
  }
}
