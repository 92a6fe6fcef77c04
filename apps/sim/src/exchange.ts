/**
 * One HTTP request/response pair as the sim tracks it, and the JSON/error writers.
 */
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { RequestRecord } from './request-log.js';
import { vllmError } from './sim-error.js';

export interface Exchange {
  req: IncomingMessage;
  res: ServerResponse;
  record: RequestRecord;
  /** The sim destroyed the socket itself (faults reset/cut): not a client abort. */
  closedByServer: boolean;
  /** Runs when the connection closes, finished or not (cancels timers). */
  onClose: (() => void) | undefined;
}

/** Writes a complete JSON response; `body` is already serialized. */
export function sendJson(exchange: Exchange, status: number, body: string, headers: OutgoingHttpHeaders = {}): void {
  exchange.record.status = status;
  exchange.res.writeHead(status, {
    ...headers,
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
  });
  exchange.res.end(body);
}

/** Writes a vLLM-shaped error (`{"error":{message,type,param,code}}`). */
export function sendError(
  exchange: Exchange,
  status: number,
  message: string,
  param: string | null = null,
  headers?: OutgoingHttpHeaders,
): void {
  sendJson(exchange, status, JSON.stringify(vllmError(status, message, param)), headers);
}

/** Destroys the socket with a TCP RST where supported (fault=reset). */
export function resetSocket(exchange: Exchange): void {
  exchange.closedByServer = true;
  const socket = exchange.res.socket ?? exchange.req.socket;
  if (typeof socket.resetAndDestroy === 'function') socket.resetAndDestroy();
  else socket.destroy();
}
