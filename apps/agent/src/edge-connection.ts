/**
 * The agent's HTTP/2 connection to one edge, shared by its Control call and every Run call:
 * connect-node's `Http2SessionManager` (dials on demand, redials after a loss, follows GOAWAY)
 * with keepalive PINGs, and an `'error'` listener on every session it opens.
 *
 * PINGs: after `pingIntervalMs` without a frame from the edge a PING goes out; one unanswered for
 * `pingTimeoutMs` closes the connection, so a connection that died without a FIN or RST (a NAT or
 * firewall dropping it, a host gone) fails its calls within seconds instead of after minutes of
 * TCP retransmissions, and the link redials.
 *
 * Session errors: a session the manager destroyed (a PING timeout) emits `'error'` after the
 * manager has already let go of it; with no listener left that would end the process. The calls
 * on the session report the failure themselves (their streams close with it).
 */
import type { ClientHttp2Stream, Http2Session, OutgoingHttpHeaders } from 'node:http2';
import { Http2SessionManager } from '@connectrpc/connect-node';
import type { RunConnection } from './run-call.js';

export interface EdgeConnectionOptions {
  /** PING after this long without a frame from the edge, ms. */
  pingIntervalMs: number;
  /** An unanswered PING closes the connection after this long, ms. */
  pingTimeoutMs: number;
  /** PEM CA for the edge's TLS certificate (`https://` URLs). */
  ca?: Buffer;
}

const ignore = () => undefined;

/**
 * What the edge sends the agent (assignments, with request bodies up to the edge's 32 MiB limit)
 * arrives on the Control stream: a window of 8 MiB per stream and 32 MiB for the connection lets
 * a 30 MB assignment through in a few round trips instead of ~460 of the 64 KiB default, and the
 * session's memory limit (MB, Node's `maxSessionMemory`: past it nghttp2 refuses new streams with
 * ENHANCE_YOUR_CALM, the Run calls included) holds a full connection window and two bodies at the
 * edge's default limit being written (a non-stream answer relayed whole) with room to spare.
 */
export const STREAM_WINDOW_BYTES = 8 * 1024 * 1024;
export const CONNECTION_WINDOW_BYTES = 32 * 1024 * 1024;
export const SESSION_MEMORY_MB = 128;

export class EdgeConnection implements RunConnection {
  private readonly manager: Http2SessionManager;
  private readonly guarded = new WeakSet<Http2Session>();

  constructor(edgeUrl: string, options: EdgeConnectionOptions) {
    this.manager = new Http2SessionManager(
      edgeUrl,
      { pingIntervalMs: options.pingIntervalMs, pingTimeoutMs: options.pingTimeoutMs },
      {
        maxSessionMemory: SESSION_MEMORY_MB,
        settings: { initialWindowSize: STREAM_WINDOW_BYTES },
        ...(options.ca === undefined ? {} : { ca: options.ca }),
      },
    );
  }

  /**
   * Opens a stream (dialling first when there is no live connection). @throws ConnectError when the edge cannot be
   * reached.
   */
  async request(
    method: string,
    path: string,
    headers: OutgoingHttpHeaders,
    options: object,
  ): Promise<ClientHttp2Stream> {
    const stream = await this.manager.request(method, path, headers, options);
    const session = stream.session;
    if (session !== undefined && !this.guarded.has(session)) {
      this.guarded.add(session);
      session.on('error', ignore);
      // The connection's own window (the SETTINGS above set each stream's).
      const widen = () => !session.destroyed && session.setLocalWindowSize(CONNECTION_WINDOW_BYTES);
      if (session.connecting) session.once('connect', widen);
      else widen();
    }
    return stream;
  }

  /** A call read response bytes: the connection is alive (no PING needed for another interval). */
  notifyResponseByteRead(stream: ClientHttp2Stream): void {
    this.manager.notifyResponseByteRead(stream);
  }

  /** Closes the current connection and its streams; the next request dials a new one. */
  abort(): void {
    this.manager.abort();
  }
}
