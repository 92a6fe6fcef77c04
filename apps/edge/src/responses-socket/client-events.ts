/**
 * Client events of Responses over a WebSocket (docs/protocols.md "Responses over WebSocket",
 * client events): text messages holding one JSON object each.
 *
 * - `response.create`: the body of `POST /v1/responses` at the top level beside `type`.
 *   `stream` is implied (Codex CLI sends `stream: true`, the guide says to leave it out: either
 *   way the response streams); `background: true` is not supported in this mode (400).
 *   `generate: false` asks for a warm-up: no model output, an id to continue from.
 * - `response.processed {response_id}`: Codex CLI's acknowledgement of a handled response, not
 *   an OpenAI event; accepted and ignored (an error event here would fail Codex's next turn).
 * - Anything else (another type, no type, bad JSON, a binary message) is a 400 `error` event and
 *   the connection stays open.
 */
import { IopError } from '@iop/core';
import type { RawData } from 'ws';

export type ClientEvent =
  { type: 'response.create'; body: Record<string, unknown>; generate: boolean } | { type: 'response.processed' };

function invalid(message: string, param?: string): IopError {
  return new IopError('invalid_request', message, param === undefined ? {} : { param });
}

function text(data: RawData): string {
  if (Buffer.isBuffer(data)) return data.toString('utf8');
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  return Buffer.from(data).toString('utf8');
}

/**
 * Reads one client message.
 * @throws IopError `invalid_request` (400) naming what is wrong: binary, not JSON, not an object,
 * no or an unknown `type`, `background: true`, a `generate` that is not a boolean.
 */
export function parseClientEvent(data: RawData, isBinary: boolean): ClientEvent {
  if (isBinary) throw invalid('binary messages are not accepted: send each client event as a JSON text message');
  let value: unknown;
  try {
    value = JSON.parse(text(data));
  } catch (error) {
    throw invalid(`the message is not valid JSON: ${error instanceof Error ? error.message : 'parse error'}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw invalid('a client event must be a JSON object');
  const { type, ...fields } = value as Record<string, unknown>;
  if (type === 'response.processed') return { type };
  if (typeof type !== 'string') throw invalid('a client event needs a string `type`: "response.create"', 'type');
  if (type !== 'response.create')
    throw invalid(`unknown client event type '${type.slice(0, 64)}': the only one is "response.create"`, 'type');
  if (fields.background === true)
    throw invalid('background responses are not supported over a WebSocket', 'background');
  const { generate, stream: _stream, background: _background, ...body } = fields;
  if (generate !== undefined && typeof generate !== 'boolean') throw invalid('generate must be a boolean', 'generate');
  return { type, body: { ...body, stream: true }, generate: generate !== false };
}
