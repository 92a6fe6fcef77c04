/**
 * Text tool calls (name `text-tool-calls`): calls written into the content in a known syntax
 * (`text-tool-call-formats.ts`) become native `tool-call-delta` events with fresh `call_…` ids, (the gate then reports
 * a `stop` finish as `tool_calls`, `deliveredFinishReason`). Markers may be split across chunks; only a trailing
 * partial marker and the open call's body are held. Whitespace around calls is dropped.
 */
import { newId } from '@iop/core';
import type { StreamEvent } from '@iop/core';
import type { EventTransformer, Rejection, TransformerFilter } from '../filter.js';
import { reject } from '../filter.js';
import { isBlank, partialMarkerLength } from './markers.js';
import type { TextToolCallFormat, TextToolCallFormatName } from './text-tool-call-formats.js';
import { TEXT_TOOL_CALL_FORMATS } from './text-tool-call-formats.js';

export interface TextToolCallOptions {
  /** Syntaxes to recognize. Default `['hermes']`. */
  formats?: TextToolCallFormatName[];
}

export function textToolCalls(options: TextToolCallOptions = {}): TransformerFilter {
  const formats = (options.formats ?? ['hermes']).map((name) => TEXT_TOOL_CALL_FORMATS[name]);
  return { kind: 'transformer', name: 'text-tool-calls', create: () => new TextToolCallExtractor(formats) };
}

class TextToolCallExtractor implements EventTransformer {
  /** The call being read, or undefined in plain text. */
  private format: TextToolCallFormat | undefined;
  private readonly body: string[] = [];
  private bodyBytes = 0;
  /** The body's last characters, where a close marker may have begun. */
  private bodyTail = '';
  /** A trailing partial open marker. */
  private pending = '';
  /** Whitespace not yet released: dropped when a call follows, released when text does. */
  private whitespace = '';
  private nextIndex = 0;
  /** The last thing read was a call: whitespace that follows it is layout, not text. */
  private afterCall = false;

  constructor(private readonly formats: readonly TextToolCallFormat[]) {}

  get heldBytes(): number {
    return this.bodyBytes + this.pending.length + this.whitespace.length;
  }

  push(event: StreamEvent, out: StreamEvent[]): Rejection | undefined {
    switch (event.type) {
      case 'text-delta':
        return this.scan(this.pending + event.text, out);
      case 'tool-call-delta':
        if (event.index >= this.nextIndex) this.nextIndex = event.index + 1;
        out.push(event);
        return undefined;
      case 'finish': {
        const rejection = this.flush(out);
        if (rejection !== undefined) return rejection;
        out.push(event);
        return undefined;
      }
      default:
        out.push(event);
        return undefined;
    }
  }

  private scan(text: string, out: StreamEvent[]): Rejection | undefined {
    this.pending = '';
    let rest = text;
    while (rest !== '') {
      if (this.format === undefined) {
        let at = -1;
        let found: TextToolCallFormat | undefined;
        for (const format of this.formats) {
          const index = rest.indexOf(format.open);
          if (index !== -1 && (at === -1 || index < at)) {
            at = index;
            found = format;
          }
        }
        if (found === undefined) {
          let keep = 0;
          for (const format of this.formats) keep = Math.max(keep, partialMarkerLength(rest, format.open));
          this.text(rest.slice(0, rest.length - keep), out);
          this.pending = rest.slice(rest.length - keep);
          return undefined;
        }
        this.text(rest.slice(0, at), out);
        this.whitespace = '';
        this.format = found;
        rest = rest.slice(at + found.open.length);
      } else {
        const close = this.format.close;
        if (close === undefined) {
          this.append(rest);
          return undefined;
        }
        // The close marker may straddle the previous part: search from its possible start.
        const carry = this.bodyTail;
        const window = carry + rest;
        const index = window.indexOf(close);
        if (index === -1) {
          this.append(rest);
          return undefined;
        }
        const rejection = this.finishCall(window.slice(0, index), carry.length, out);
        if (rejection !== undefined) return rejection;
        rest = window.slice(index + close.length);
      }
    }
    return undefined;
  }

  private append(text: string): void {
    this.body.push(text);
    this.bodyBytes += text.length;
    const keep = (this.format?.close?.length ?? 1) - 1;
    this.bodyTail = keep === 0 ? '' : (this.bodyTail + text).slice(-keep);
  }

  /** Ends the open call; `tail` is its last text, of which `overlap` chars are already in `body`. */
  private finishCall(tail: string, overlap: number, out: StreamEvent[]): Rejection | undefined {
    const format = this.format!;
    let body = this.body.join('');
    body = body.slice(0, body.length - overlap) + tail;
    this.body.length = 0;
    this.bodyBytes = 0;
    this.bodyTail = '';
    this.format = undefined;
    const calls = format.parse(body);
    if (typeof calls === 'string') {
      return reject(`${format.name} text tool call: ${calls}`, 'retry-with-patch', {
        patch: `Your previous tool call could not be read (${calls}). Call the tool again with a valid JSON object.`,
      });
    }
    for (const call of calls)
      out.push({
        type: 'tool-call-delta',
        index: this.nextIndex++,
        id: newId('call_'),
        name: call.name,
        argumentsDelta: call.arguments,
      });
    this.afterCall = true;
    return undefined;
  }

  private text(text: string, out: StreamEvent[]): void {
    if (text === '') return;
    if (isBlank(text)) {
      if (!this.afterCall) this.whitespace += text;
      return;
    }
    if (this.afterCall) {
      text = text.trimStart();
      this.afterCall = false;
    }
    // Trailing whitespace waits for the next text (a call may follow, and whitespace before a call is dropped).
    let end = text.length;
    while (end > 0 && isBlank(text[end - 1]!)) end--;
    const released = this.whitespace + text.slice(0, end);
    this.whitespace = text.slice(end);
    out.push({ type: 'text-delta', text: released });
  }

  private flush(out: StreamEvent[]): Rejection | undefined {
    if (this.format !== undefined) return this.finishCall('', 0, out);
    const pending = this.pending;
    this.pending = '';
    this.text(pending, out);
    if (this.whitespace !== '') out.push({ type: 'text-delta', text: this.whitespace });
    this.whitespace = '';
    return undefined;
  }
}
