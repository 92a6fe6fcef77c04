/**
 * One response's writer on a Responses WebSocket: the part of express's `Response` that the
 * inference pipeline writes through (request/inference.ts, normalized.ts, drained.ts, request-outcome.ts,
 * error-handler.ts), so a `response.create` takes exactly the path of a `POST /v1/responses`
 * (admission, limits, gate, attempts, usage, ledger, metrics, log) and only the last step differs:
 *
 * - `write(text)` takes the socket dialect's JSON lines (`createResponsesLinesEncoder`) and sends
 *   each as one text message; it returns false while the socket holds more than `highWaterMark`
 *   bytes unsent (`ws` `bufferedAmount`), and 'drain' is emitted when the sends' callbacks bring
 *   it below, so the pipeline's backpressure (and its write-stall timeout) work unchanged.
 * - `status(n).json(body)` of an error (the error handler, before the first event) becomes the
 *   in-band `error` event `{type:"error", status, error:{type, code, message, param}, headers}`
 *   (docs/protocols.md "Responses over WebSocket", errors): `status` is the HTTP status the same
 *   request gets over HTTP, which Codex CLI classifies like one (429 rate limits with the headers,
 *   5xx retried, other 4xx fatal).
 * - 'close' is emitted once: at `end()` (or, with the buffer over the mark, at the next 'drain'),
 *   with `writableFinished` true (the last messages are in `ws`'s queue, which sends them in
 *   order), or with `writableFinished` false when the socket closed
 *   first (`socketClosed()`): the pipeline then stops the request as for a client that hung up
 *   (run cancelled, 499 in the ledger).
 */
import { EventEmitter } from 'node:events';
import type { WebSocket } from 'ws';

/** A terminal event's line (the encoder writes `type` first). */
const TERMINAL = /^\{"type":"response\.(?:completed|failed|incomplete)"/;

/** What the pipeline may set as a header; kept to render it in an error event. */
type HeaderValue = string | number | readonly string[];

export class SocketResponse extends EventEmitter {
  /** Express's `res.locals`: the request context (http/request-context.ts). */
  readonly locals: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
  statusCode = 200;
  statusMessage = '';
  headersSent = false;
  writableEnded = false;
  writableFinished = false;
  destroyed = false;
  private readonly headers = new Map<string, HeaderValue>();
  private closed = false;
  /**
   * The response's terminal event (`response.completed`, `.failed`, `.incomplete`) has been sent:
   * the client may send its next `response.create` while the pipeline still finishes this one
   * (storing the response, before `end()`).
   */
  terminalSent = false;

  constructor(
    private readonly socket: WebSocket,
    private readonly highWaterMark: number,
  ) {
    super();
  }

  setHeader(name: string, value: HeaderValue): this {
    this.headers.set(name.toLowerCase(), value);
    return this;
  }

  getHeader(name: string): HeaderValue | undefined {
    return this.headers.get(name.toLowerCase());
  }

  status(code: number): this {
    this.statusCode = code;
    return this;
  }

  /**
   * Sends each complete line of `text` as a text message. @returns false while the socket's buffer is over the mark.
   */
  write(text: string): boolean {
    if (this.destroyed || this.writableEnded) return false;
    this.headersSent = true;
    let start = 0;
    for (let end = text.indexOf('\n'); end !== -1; end = text.indexOf('\n', start)) {
      if (end > start) {
        const line = text.slice(start, end);
        if (TERMINAL.test(line)) this.terminalSent = true;
        this.send(line);
      }
      start = end + 1;
    }
    return this.socket.bufferedAmount < this.highWaterMark;
  }

  end(text?: string): this {
    if (this.writableEnded) return this;
    if (text !== undefined) this.write(text);
    this.writableEnded = true;
    this.settle();
    return this;
  }

  /**
   * Sends the body as one message: an error body (status 400 and up) as the in-band `error`
   * event with its status and headers, anything else as it is (a non-stream answer: not used,
   * the socket's requests always stream).
   */
  json(body: unknown): this {
    if (this.statusCode >= 400) this.send(JSON.stringify(errorEvent(this.statusCode, body, this.headers)));
    else this.send(JSON.stringify(body));
    this.headersSent = true;
    return this.end();
  }

  /** The pipeline gave up on a client that stopped reading: the socket is terminated. */
  destroy(): this {
    if (this.destroyed) return this;
    this.destroyed = true;
    this.socket.terminate();
    this.emitClose();
    return this;
  }

  /** The socket closed (client gone, idle, shutdown): a response not finished stops as a client that hung up. */
  socketClosed(): void {
    if (this.writableFinished) return;
    this.destroyed = true;
    this.emitClose();
  }

  private send(message: string): void {
    if (this.socket.readyState !== this.socket.OPEN) return;
    this.socket.send(message, () => {
      if (this.socket.bufferedAmount < this.highWaterMark) this.emit('drain');
    });
  }

  /**
   * Ended, and the socket's buffer under the mark: finished (a client that reads nothing never finishes one;
   * http/drained.ts's `endStalled` then destroys it).
   */
  private settle(): void {
    if (!this.writableEnded || this.writableFinished || this.destroyed) return;
    if (this.socket.bufferedAmount >= this.highWaterMark) {
      this.once('drain', () => this.settle());
      return;
    }
    this.writableFinished = true;
    this.emit('finish');
    this.emitClose();
  }

  private emitClose(): void {
    if (this.closed) return;
    this.closed = true;
    this.emit('close');
  }
}

/** The in-band error event of an OpenAI error body (`{error:{message,type,param,code}}`) answered with `status`. */
export function errorEvent(
  status: number,
  body: unknown,
  headers: ReadonlyMap<string, HeaderValue> = new Map(),
): Record<string, unknown> {
  let error = typeof body === 'object' && body !== null && 'error' in body ? (body as { error: unknown }).error : body;
  if (
    status === 404 &&
    typeof error === 'object' &&
    error !== null &&
    (error as { param?: unknown }).param === 'previous_response_id'
  ) {
    // On a socket an unknown or unusable previous_response_id is 400 `previous_response_not_found`
    // (OpenAI's WebSocket mode guide), which Codex CLI answers by sending the full input again.
    status = 400;
    error = { ...error, type: 'invalid_request_error', code: 'previous_response_not_found' };
  }
  const event: Record<string, unknown> = { type: 'error', status, error };
  if (headers.size > 0)
    event.headers = Object.fromEntries(
      [...headers].map(([name, value]) => [name, Array.isArray(value) ? value.join(', ') : String(value)]),
    );
  return event;
}
