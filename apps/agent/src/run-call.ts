/**
 * The agent's side of `iop.v1.TunnelService/Run` over gRPC, written on a raw HTTP/2 stream of the
 * link's connection to the edge. Run is the tunnel's per-request hot path (one call per run, one
 * message per body slice), so it skips Connect's generic call machinery (async-iterable
 * pipelines, linked abort signals, header conversions), which was about a sixth of the agent's
 * CPU per run; Control (control-call.ts) shares the same HTTP/2 connection (one
 * `Http2SessionManager` per edge: keepalive PINGs, reconnects, GOAWAY handling).
 *
 * Wire behaviour follows "gRPC over HTTP2" (grpc/grpc PROTOCOL-HTTP2.md): a POST with
 * `content-type: application/grpc+proto`, `te: trailers` and the session's `iop-session-id`
 * (which binds the call to the Control session the run was assigned on), each ProviderTunnelFrame as one
 * length-prefixed message; the edge answers with a Trailers-Only response: `grpc-status: 0` once it
 * has the run's END or ERROR frame, or the error (NOT_FOUND, CANCELLED, …).
 *
 * Writes: the first frame (ACCEPTED) leaves with the stream's HEADERS. Later frames are held and
 * leave together in one write (one HTTP/2 DATA frame, one wake-up of the edge): those of a
 * non-stream answer until the end of the event-loop turn they were produced in, so RESPONSE_START,
 * the body, USAGE and END go as one (a body's end is seen ticks after its last bytes); those of an
 * event stream (`text/event-stream`) until the end of the tick, so a token never waits for a
 * loop turn (the stream's USAGE and END then follow in a write of their own).
 *
 * Backpressure: `push` answers a promise while the stream's buffer is full (above its high-water
 * mark), and the relay reads no more of the backend until it settles, so HTTP/2 flow control from
 * the edge holds the backend socket.
 */
import { once } from 'node:events';
import type { ClientHttp2Stream, OutgoingHttpHeaders } from 'node:http2';
import { Code, ConnectError } from '@connectrpc/connect';
import {
  ProviderTunnelFrame_Kind as FrameKind,
  RUN_PATH,
  RUN_SESSION_HEADER,
  encodeFrameMessage,
  type ProviderTunnelFrame,
} from '@iop/proto';
import { CallStatus } from './grpc-status.js';

/** What a Run call needs of the connection to the edge (`Http2SessionManager` of connect-node). */
export interface RunConnection {
  request(method: string, path: string, headers: OutgoingHttpHeaders, options: object): Promise<ClientHttp2Stream>;
  notifyResponseByteRead(stream: ClientHttp2Stream): void;
}

/**
 * One Run call, written frame by frame as the run produces them (`push`, the relay's
 * `FrameSink`), then closed with `end`.
 */
export class RunCall {
  /** Settles with the call's failure (undefined: OK) once the edge ended its side or the stream closed. */
  private readonly outcome: Promise<ConnectError | undefined>;
  private readonly status: CallStatus;
  private settled = false;
  /** The edge has every frame up to the final one: an answer from here is no early end. */
  private allSent = false;
  /** The edge answered the call (its HEADERS came): it has seen the run. */
  answered = false;
  private holding = false;
  private first = true;
  private eventStream = false;
  private readonly release = () => {
    this.holding = false;
    if (this.stream.writableCorked > 0) this.stream.uncork();
  };

  private constructor(
    private readonly stream: ClientHttp2Stream,
    onClosedEarly: (error: ConnectError) => void,
  ) {
    this.status = new CallStatus(stream);
    stream.once('response', () => (this.answered = true));
    // The call is over once the edge ended its side (trailers: 'end') or the stream closed (reset,
    // lost connection): the edge may answer before the agent sent everything (it cancelled the run).
    this.outcome = new Promise<ConnectError | undefined>((resolve) => {
      const settle = () => {
        if (this.settled) return;
        this.settled = true;
        const error =
          this.status.ok && !this.allSent
            ? new ConnectError('the edge ended the run call early', Code.Aborted)
            : this.status.error();
        if (!this.allSent) {
          if (!stream.destroyed) stream.close(8 /* CANCEL */);
          if (error !== undefined) onClosedEarly(error);
        }
        resolve(error);
      };
      stream.once('end', settle);
      stream.once('close', settle);
    });
  }

  /**
   * Opens a Run call on the link's connection.
   * @param sessionId the `session_id` of the Control session that assigned the run (from Registered).
   * @param onClosedEarly called once if the call ends (edge answer, reset, lost connection) before
   *   every frame was sent: the caller stops the backend at once instead of at its next frame.
   * @param initial the call's first frames (ACCEPTED first), written at once in one message block: they leave with
   *   the stream's HEADERS in one write.
   * @throws what the connection throws when no stream can be opened (connection lost, GOAWAY).
   */
  static async open(
    connection: RunConnection,
    sessionId: string,
    onClosedEarly: (error: ConnectError) => void,
    initial: readonly ProviderTunnelFrame[] = [],
  ): Promise<RunCall> {
    const headers: OutgoingHttpHeaders = {
      'content-type': 'application/grpc+proto',
      te: 'trailers',
      'grpc-accept-encoding': 'identity',
      [RUN_SESSION_HEADER]: sessionId,
    };
    const stream = await connection.request('POST', RUN_PATH, headers, {});
    stream.on('data', () => connection.notifyResponseByteRead(stream));
    const call = new RunCall(stream, onClosedEarly);
    if (initial.length > 0) call.writeInitial(initial);
    return call;
  }

  /** Writes the call's first frames as one block (one write, no hold): see `open`. */
  private writeInitial(frames: readonly ProviderTunnelFrame[]): void {
    this.first = false;
    for (const frame of frames) {
      if (frame.kind === FrameKind.RESPONSE_START)
        this.eventStream = frame.headers['content-type']?.startsWith('text/event-stream') === true;
      if (frame.kind === FrameKind.END || frame.kind === FrameKind.ERROR) this.allSent = true;
    }
    this.stream.write(
      frames.length === 1 ? encodeFrameMessage(frames[0]!) : Buffer.concat(frames.map(encodeFrameMessage)),
    );
  }

  /**
   * Writes one frame as a length-prefixed message (see the header for when it leaves). Frames
   * after the call ended are dropped. Returns a promise while the stream's buffer is full: it
   * settles once the stream drained or the call ended.
   */
  push(frame: ProviderTunnelFrame): Promise<void> | undefined {
    const stream = this.stream;
    if (this.settled || stream.destroyed || stream.writableEnded) return undefined;
    if (this.first) this.first = false;
    else if (!this.holding) {
      this.holding = true;
      stream.cork();
      if (this.eventStream && frame.kind === FrameKind.BODY) process.nextTick(this.release);
      else setImmediate(this.release);
    }
    if (frame.kind === FrameKind.RESPONSE_START)
      this.eventStream = frame.headers['content-type']?.startsWith('text/event-stream') === true;
    const written = stream.write(encodeFrameMessage(frame));
    // The edge answers the call once it has the final frame: from here an answer is no early end.
    if (frame.kind === FrameKind.END || frame.kind === FrameKind.ERROR) this.allSent = true;
    if (written) return undefined;
    return Promise.race([once(stream, 'drain'), this.outcome]).then(noop, noop);
  }

  /**
   * Ends the agent's side and waits for the edge's answer.
   * @throws ConnectError with the gRPC status when the edge answered with an error, reset the
   *   stream or the connection was lost.
   */
  async end(): Promise<void> {
    const stream = this.stream;
    if (!this.allSent) this.allSent = !this.settled && !stream.destroyed;
    if (!stream.writableEnded && !stream.destroyed) stream.end();
    const error = await this.outcome;
    if (error !== undefined) throw error;
  }

  /** Abandons the call (the run's producer failed): the edge must not wait for more. */
  abort(): void {
    if (!this.stream.destroyed) this.stream.close(8 /* CANCEL */);
  }
}

function noop(): void {}
