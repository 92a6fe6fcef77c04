/**
 * Reasoning extraction (name `reasoning`): a `<think>…</think>` block at the start of the content
 * becomes `reasoning-delta` events, for models served without a reasoning parser (docs/protocols.md "Reasoning").
 * Tags may be split across chunks. With `openTagInPrompt` (chat templates that put `<think>` in
 * the prompt, so the output holds only `</think>`), the output starts inside the reasoning. Only
 * a leading block is extracted: a `<think>` later in the answer is the answer's own text.
 * Whitespace right after `</think>` is dropped. Native `reasoning-delta` events pass unchanged.
 */
import type { StreamEvent } from '@iop/core';
import type { EventTransformer, TransformerFilter } from '../filter.js';
import { isBlank, partialMarkerLength } from './markers.js';

export interface ReasoningExtractionOptions {
  /** The template opened the block in the prompt: output begins as reasoning. Default false. */
  openTagInPrompt?: boolean;
  /** Default `<think>`. */
  openTag?: string;
  /** Default `</think>`. */
  closeTag?: string;
}

export function reasoningExtraction(options: ReasoningExtractionOptions = {}): TransformerFilter {
  const openTag = options.openTag ?? '<think>';
  const closeTag = options.closeTag ?? '</think>';
  return {
    kind: 'transformer',
    name: 'reasoning',
    create(context) {
      // A continuation already streams answer text; reasoning switched off means no block at all.
      const done = context.continuation !== undefined || context.request.reasoning?.enabled === false;
      return new ReasoningExtractor(openTag, closeTag, options.openTagInPrompt === true, done);
    },
  };
}

type State = 'start' | 'reasoning' | 'text';

class ReasoningExtractor implements EventTransformer {
  private state: State;
  /** Unresolved tail: leading whitespace or a partial tag. */
  private pending = '';
  private trimLeading = false;

  constructor(
    private readonly openTag: string,
    private readonly closeTag: string,
    private readonly openTagInPrompt: boolean,
    done: boolean,
  ) {
    this.state = done ? 'text' : 'start';
  }

  get heldBytes(): number {
    return this.pending.length;
  }

  push(event: StreamEvent, out: StreamEvent[]): undefined {
    if (event.type === 'text-delta') {
      if (this.state === 'text' && !this.trimLeading) out.push(event);
      else this.scan(this.pending + event.text, out);
    } else {
      if (event.type === 'finish' || event.type === 'tool-call-delta') this.flush(out);
      out.push(event);
    }
    return undefined;
  }

  private scan(text: string, out: StreamEvent[]): void {
    this.pending = '';
    let rest = text;
    while (rest !== '') {
      if (this.state === 'start') {
        const trimmed = rest.trimStart();
        if (trimmed === '' || (trimmed.length < this.openTag.length && this.openTag.startsWith(trimmed))) {
          this.pending = rest;
          return;
        }
        if (trimmed.startsWith(this.openTag)) {
          this.state = 'reasoning';
          rest = trimmed.slice(this.openTag.length);
        } else {
          this.state = this.openTagInPrompt ? 'reasoning' : 'text';
        }
      } else if (this.state === 'reasoning') {
        const close = rest.indexOf(this.closeTag);
        if (close !== -1) {
          this.reasoning(rest.slice(0, close), out);
          this.state = 'text';
          this.trimLeading = true;
          rest = rest.slice(close + this.closeTag.length);
        } else {
          const keep = partialMarkerLength(rest, this.closeTag);
          this.reasoning(rest.slice(0, rest.length - keep), out);
          this.pending = rest.slice(rest.length - keep);
          return;
        }
      } else {
        this.text(rest, out);
        return;
      }
    }
  }

  private reasoning(text: string, out: StreamEvent[]): void {
    if (text !== '') out.push({ type: 'reasoning-delta', text });
  }

  private text(text: string, out: StreamEvent[]): void {
    if (this.trimLeading) {
      if (isBlank(text)) return;
      text = text.trimStart();
      this.trimLeading = false;
    }
    out.push({ type: 'text-delta', text });
  }

  /** Before a tool call or the finish: what is pending is final. */
  private flush(out: StreamEvent[]): void {
    const pending = this.pending;
    this.pending = '';
    if (pending === '') return;
    if (this.state === 'reasoning') this.reasoning(pending, out);
    else if (!isBlank(pending) || this.state === 'start') this.text(pending, out);
  }
}
