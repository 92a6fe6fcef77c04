/**
 * JSON-mode code-fence unwrap (transformer, part of `structured-output`): with `response_format`
 * `json_object` / `json_schema`, open models often answer with one JSON value inside a single
 * Markdown code fence (```json … ```). The fence is removed so the value is validated (and sent)
 * bare, instead of failing validation and being retried to a 502.
 *
 * - Leading whitespace is held until the first other character decides: "```" opens a fence
 *   (its info string, e.g. `json`, up to the first newline is dropped); anything else passes as is.
 * - Inside a fence, a tail of whitespace and backticks is held (it may be the closing fence); at
 *   the finish a held closing fence is dropped. Text after a closing fence means the answer was
 *   not a single fenced value: it goes out with the fence (validation then rejects it).
 * - A turn cut by the output limit keeps what was generated (minus the opening fence).
 */
import type { StreamEvent } from '@iop/core';
import type { EventTransformer, TransformerFilter } from '../filter.js';

const FENCE = '```';

export function jsonFenceUnwrap(): TransformerFilter {
  return {
    kind: 'transformer',
    name: 'json-fence-unwrap',
    create(context) {
      const format = context.request.responseFormat;
      // A continuation already committed its opening: nothing to unwrap any more.
      if (format === undefined || format.type === 'text' || context.continuation !== undefined) return PASS_THROUGH;
      return new JsonFenceUnwrap();
    },
  };
}

const PASS_THROUGH: EventTransformer = {
  heldBytes: 0,
  push(event, out) {
    out.push(event);
    return undefined;
  },
};

type Phase = 'lead' | 'info' | 'inside' | 'plain';

class JsonFenceUnwrap implements EventTransformer {
  private phase: Phase = 'lead';
  private held = '';

  get heldBytes(): number {
    return Buffer.byteLength(this.held);
  }

  push(event: StreamEvent, out: StreamEvent[]): undefined {
    if (event.type !== 'text-delta') {
      if (event.type === 'finish') this.flushAtFinish(out);
      else if (event.type === 'tool-call-delta') this.release(out);
      out.push(event);
      return undefined;
    }
    if (this.phase === 'plain') {
      out.push(event);
      return undefined;
    }
    this.held += event.text;
    this.advance(out);
    return undefined;
  }

  private advance(out: StreamEvent[]): void {
    if (this.phase === 'lead') {
      const start = this.held.search(/\S/);
      if (start === -1) return;
      const rest = this.held.slice(start);
      if (rest.length < FENCE.length && FENCE.startsWith(rest)) return; // may still become a fence
      if (!rest.startsWith(FENCE)) {
        this.release(out);
        return;
      }
      this.held = rest.slice(FENCE.length);
      this.phase = 'info';
    }
    if (this.phase === 'info') {
      const newline = this.held.indexOf('\n');
      if (newline === -1) return;
      this.held = this.held.slice(newline + 1);
      this.phase = 'inside';
    }
    // Inside: send all but a trailing run of whitespace and backticks (a possible closing fence).
    const tail = /[\s`]*$/.exec(this.held)!.index;
    if (tail > 0) {
      out.push({ type: 'text-delta', text: this.held.slice(0, tail) });
      this.held = this.held.slice(tail);
    }
  }

  /** Sends what is held, unchanged, and stops unwrapping. */
  private release(out: StreamEvent[]): void {
    if (this.held.length > 0) out.push({ type: 'text-delta', text: this.held });
    this.held = '';
    this.phase = 'plain';
  }

  private flushAtFinish(out: StreamEvent[]): void {
    if (this.phase === 'inside') {
      const text = this.held.replace(/\s*```\s*$/, '');
      if (text.length > 0) out.push({ type: 'text-delta', text });
      this.held = '';
      this.phase = 'plain';
      return;
    }
    this.release(out);
  }
}
