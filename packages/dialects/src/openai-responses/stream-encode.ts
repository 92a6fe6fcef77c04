/**
 * Hub events → Responses SSE (docs/protocols.md "Responses stream"): every event framed as `event: <type>` +
 * `data: <json>`, with `sequence_number` from 0 in steps of 1. The grammar itself is
 * `ResponseBuilder`'s and `OutputTracker`'s. No `[DONE]`: the stream ends after the terminal
 * event. `settle()` gives the final Response object before its terminal event is written (for the
 * response store), `result()` after `end()`.
 *
 * With `'lines'` framing the same events come as JSON lines (one event's JSON and `\n` each; JSON
 * text never holds a raw newline): Responses over a WebSocket sends each line as one text
 * message, exactly the object SSE puts after `data:` (docs/protocols.md "Responses over WebSocket").
 */
import { sseJson, type EncodeContext, type StreamEncoder, type StreamEvent } from '@iop/core';
import type { WireEvent } from './items.js';
import { ResponseBuilder } from './response-builder.js';
import type { ResponseObject } from './wire-types.js';

/** How each event is framed: an SSE event, or one JSON line. */
export type ResponsesFraming = 'sse' | 'lines';

export class ResponsesStreamEncoder implements StreamEncoder {
  private readonly builder: ResponseBuilder;
  private sequenceNumber = 0;
  private pending = '';
  private ended = false;

  constructor(
    context: EncodeContext,
    private readonly framing: ResponsesFraming = 'sse',
  ) {
    this.builder = new ResponseBuilder(context, (event) => this.write(event));
  }

  push(event: StreamEvent): string {
    this.builder.push(event);
    return this.take();
  }

  end(): string {
    this.builder.end();
    this.ended = true;
    return this.take();
  }

  /**
   * Settles the stream's outcome and returns the final Response without writing its terminal
   * event (StreamEncoder.settle): the edge keeps it in the Responses store first, and pushes an
   * `error` event when that fails, so the terminal event it then writes (`end()`) tells the truth.
   */
  settle(): ResponseObject {
    return this.builder.settle();
  }

  /** The final Response (with `output_text`), once `end()` has run; undefined before. */
  result(): ResponseObject | undefined {
    return this.ended ? this.builder.response : undefined;
  }

  private write(event: WireEvent): void {
    event.sequence_number = this.sequenceNumber++;
    this.pending += this.framing === 'sse' ? sseJson(event, event.type) : `${JSON.stringify(event)}\n`;
  }

  private take(): string {
    const text = this.pending;
    this.pending = '';
    return text;
  }
}

export function createResponsesStreamEncoder(context: EncodeContext): ResponsesStreamEncoder {
  return new ResponsesStreamEncoder(context);
}

/** The encoder of Responses over a WebSocket: the SSE stream's events as JSON lines. */
export function createResponsesLinesEncoder(context: EncodeContext): ResponsesStreamEncoder {
  return new ResponsesStreamEncoder(context, 'lines');
}
