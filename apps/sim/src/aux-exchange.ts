/**
 * What the sim's JSON endpoints beside chat (embeddings, completions, rerank, score) share: the
 * model check, the knobs of the request (CLI < model suffix < `x-sim-*` headers < queued fault,
 * as for chat), the faults that answer before any output (403/429/500/503, reset, no-response,
 * context-length), and a whole JSON answer after the simulated latency with the mid-stream faults
 * mapped as chat's non-stream answer maps them (cut = socket destroyed, malformed = broken JSON,
 * no-done = half the body, error-chunk = 500, stall = no answer).
 */
import { drawFault, resolveKnobs, sendStatusFault, type SimContext } from './chat-handler.js';
import { sendJsonWithFault } from './json-fault.js';
import { MID_STREAM_FAULTS, type MidStreamFault } from './chat-stream.js';
import { resetSocket, sendError, type Exchange } from './exchange.js';
import type { FaultName, Knobs } from './knobs.js';
import { parseModelName } from './model-name.js';
import { contextLengthMessage, SimInputError } from './sim-error.js';

export interface AuxRequest {
  knobs: Knobs;
  fault: FaultName;
  /** The fault that strikes during or after output, if any. */
  midStream: MidStreamFault | undefined;
}

/** A JSON object body, else a 400. */
export function objectBody(body: unknown): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new SimInputError('the request body must be a JSON object');
  return body as Record<string, unknown>;
}

/** The model field, checked against the served models; undefined after a 404 was sent. */
export function servedModel(
  context: SimContext,
  exchange: Exchange,
  body: Record<string, unknown>,
): { model: string; suffixKnobs: Partial<Knobs> | undefined } | undefined {
  if (typeof body.model !== 'string') throw new SimInputError('model must be a string', { param: 'model' });
  exchange.record.model = body.model;
  const name = parseModelName(body.model);
  if (!context.models.has(name.base)) {
    sendError(exchange, 404, `The model \`${body.model}\` does not exist.`);
    return undefined;
  }
  return { model: body.model, suffixKnobs: name.knobs };
}

/**
 * Resolves the knobs and applies a fault that answers before any output.
 * @returns undefined when the request was answered (a fault), else its knobs and fault.
 */
export function beginAux(
  context: SimContext,
  exchange: Exchange,
  suffixKnobs: Partial<Knobs> | undefined,
  promptTokens: number,
): AuxRequest | undefined {
  const knobs = resolveKnobs(context, exchange, suffixKnobs);
  const fault = drawFault(knobs, exchange.record.id);
  if (fault !== 'none') context.log.markFault(exchange.record, fault);
  switch (fault) {
    case '403':
    case '429':
    case '500':
    case '503':
      sendStatusFault(exchange, Number(fault) as 403 | 429 | 500 | 503, fault === '403' ? 0 : knobs.retryAfter);
      return undefined;
    case 'reset':
      resetSocket(exchange);
      return undefined;
    case 'no-response':
      return undefined;
    case 'context-length':
      sendError(exchange, 400, contextLengthMessage(knobs.maxModelLen, promptTokens, 0));
      return undefined;
    default:
      break;
  }
  if (promptTokens >= knobs.maxModelLen) {
    sendError(exchange, 400, contextLengthMessage(knobs.maxModelLen, promptTokens, 0));
    return undefined;
  }
  return { knobs, fault, midStream: MID_STREAM_FAULTS.includes(fault) ? (fault as MidStreamFault) : undefined };
}

/** Sends `body` (serialized JSON) after `delayMs`, with the request's mid-stream fault applied. */
export function answerJsonLater(
  exchange: Exchange,
  body: string,
  delayMs: number,
  fault: MidStreamFault | undefined,
): void {
  if (fault === 'stall') return;
  const respond = () => {
    if (exchange.res.destroyed) return;
    sendJsonWithFault(exchange, body, fault);
  };
  if (delayMs <= 0) {
    respond();
    return;
  }
  const timer = setTimeout(respond, delayMs);
  exchange.onClose = () => clearTimeout(timer);
}

/** FNV-1a of a string: the seed of an input's deterministic output. */
export function hashText(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}
