/**
 * Accumulates the hub's `tool-call-delta` events into whole calls by `index` (parallel calls kept apart,
 * docs/protocols.md "Chat stream"): the first event carries id and name, later ones argument fragments, joined once
 * when read. (The Chat wire's fragments became these events in `@iop/dialects`' `ToolCallDeltaDecoder`.)
 */
import type { ToolCallDeltaEvent } from '@iop/core';

export interface AccumulatedToolCall {
  index: number;
  id: string;
  /** "" when no fragment named it. */
  name: string;
  /** The JSON-encoded arguments as streamed ("" when none). */
  arguments: string;
}

interface Entry {
  index: number;
  id: string;
  name: string;
  parts: string[];
}

export class ToolCallAccumulator {
  private readonly entries = new Map<number, Entry>();

  get size(): number {
    return this.entries.size;
  }

  push(event: ToolCallDeltaEvent): void {
    let entry = this.entries.get(event.index);
    if (entry === undefined) {
      entry = { index: event.index, id: '', name: '', parts: [] };
      this.entries.set(event.index, entry);
    }
    if (event.id !== undefined && entry.id === '') entry.id = event.id;
    if (event.name !== undefined && entry.name === '') entry.name = event.name;
    if (event.argumentsDelta !== '') entry.parts.push(event.argumentsDelta);
  }

  /** The calls so far, in index order. */
  calls(): AccumulatedToolCall[] {
    return [...this.entries.values()]
      .sort((a, b) => a.index - b.index)
      .map((entry) => ({ index: entry.index, id: entry.id, name: entry.name, arguments: entry.parts.join('') }));
  }
}
