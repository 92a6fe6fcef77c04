/**
 * A whole JSON answer (a non-stream chat completion, an embeddings or rerank answer) with the
 * request's mid-stream fault applied: cut = socket destroyed, malformed = 200 with broken JSON,
 * no-done = half the body then the socket destroyed, error-chunk = 500; no fault = the body.
 * (`stall` never gets here: it never answers.)
 */
import type { MidStreamFault } from './chat-stream.js';
import { resetSocket, sendError, sendJson, type Exchange } from './exchange.js';

export function sendJsonWithFault(exchange: Exchange, body: string, fault: MidStreamFault | undefined): void {
  switch (fault) {
    case 'cut':
      resetSocket(exchange);
      return;
    case 'malformed':
      sendJson(exchange, 200, body.slice(0, -2));
      return;
    case 'no-done':
      exchange.record.status = 200;
      exchange.res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      exchange.closedByServer = true;
      exchange.res.write(body.slice(0, body.length >> 1), () => exchange.res.socket?.destroy());
      return;
    case 'error-chunk':
      sendError(exchange, 500, 'simulated fault: error during generation');
      return;
    default:
      sendJson(exchange, 200, body);
  }
}
