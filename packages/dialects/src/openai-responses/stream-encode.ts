/**
 * Hub events → Responses SSE (docs/protocols.md "Responses stream"): every event framed as `event: <type>` +
 * `data: <json>`, with `sequence_number` from 0 in steps of 1. The grammar itself is
 * `ResponseBuilder`'s and `OutputTracker`'s. No `[DONE]`: the stream ends after the terminal
 * event. `settle()` gives the final Response object before its terminal event is written (for the
 * response store), `result()` after `end()`.
 */
import { sseJson, type EncodeContext, type StreamEncoder, type StreamEvent } from '@iop/core';
import type { WireEvent } from './items.js';
import { ResponseBuilder } from './response-builder.js';
import type { ResponseObject } from './wire-types.js';

export class ResponsesStreamEncoder implements StreamEncoder {
  private readonly builder: ResponseBuilder;
  private sequenceNumber = 0;
  private pending = '';
  private ended = false;

  constructor(context: EncodeContext) {
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
    this.pending += sseJson(event, event.type);
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
