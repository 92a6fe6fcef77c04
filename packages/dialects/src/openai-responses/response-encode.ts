/**
 * Hub events → the non-stream Response body (docs/protocols.md "Responses object" and "Responses input and Chat
 * messages", Chat output → Responses output): the same builder as the stream, its wire events discarded.
 */
import { iopErrorOf, type EncodeContext, type StreamEvent } from '@iop/core';
import { ResponseBuilder } from './response-builder.js';
import type { ResponseObject } from './wire-types.js';

function discard(): void {}

/**
 * Builds the Response object (`object:"response"`, `status`, `output`, `output_text`, `usage`,
 * echoed request fields). @throws IopError when the events end in an `error` event (the edge
 * renders it as an HTTP error with that event's code and status).
 */
export function encodeResponsesResponse(events: readonly StreamEvent[], context: EncodeContext): ResponseObject {
  const builder = new ResponseBuilder(context, discard);
  for (const event of events) builder.push(event);
  const failure = builder.failure;
  if (failure !== undefined) throw iopErrorOf({ ...failure, type: 'error' });
  builder.end();
  const cut = builder.failure;
  if (cut !== undefined) throw iopErrorOf({ ...cut, type: 'error' });
  return builder.response;
}
