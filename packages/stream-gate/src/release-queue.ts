/**
 * The events an attempt holds, in order, with their UTF-8 size, and the per-validator hold marks
 * that decide how far the queue may be released. Sequence numbers count every event ever queued
 * in the attempt; `released` is the first one not yet handed to the client.
 */
import type { StreamEvent } from '@iop/core';

/** Fixed cost counted for events without a payload (start, finish), bytes. */
const EVENT_OVERHEAD_BYTES = 64;

/** UTF-8 bytes an event holds (its text or argument fragment plus a fixed overhead). */
export function eventBytes(event: StreamEvent): number {
  switch (event.type) {
    case 'text-delta':
    case 'reasoning-delta':
      return EVENT_OVERHEAD_BYTES + Buffer.byteLength(event.text);
    case 'tool-call-delta':
      return (
        EVENT_OVERHEAD_BYTES +
        Buffer.byteLength(event.argumentsDelta) +
        (event.name?.length ?? 0) +
        (event.id?.length ?? 0)
      );
    default:
      return EVENT_OVERHEAD_BYTES;
  }
}

export class ReleaseQueue {
  private events: StreamEvent[] = [];
  private sizes: number[] = [];
  /** Index in `events` of the first unreleased event. */
  private head = 0;
  private bytes = 0;
  /** Sequence number of the first unreleased event. */
  released = 0;

  /** Sequence number the next queued event gets. */
  get nextSeq(): number {
    return this.released + this.events.length - this.head;
  }

  /** UTF-8 bytes held now. */
  get heldBytes(): number {
    return this.bytes;
  }

  push(event: StreamEvent): void {
    const size = eventBytes(event);
    this.events.push(event);
    this.sizes.push(size);
    this.bytes += size;
  }

  /**
   * Hands out the events with sequence numbers below `limit`, in order, and forgets them. A
   * lone `response-start` is kept back: it waits for the first event after it, so a failure
   * before any content stays invisible.
   */
  take(limit: number): StreamEvent[] {
    const count = Math.min(limit, this.nextSeq) - this.released;
    if (count <= 0) return EMPTY;
    if (count === 1 && this.released === 0 && this.events[this.head]!.type === 'response-start') return EMPTY;
    const out = this.events.slice(this.head, this.head + count);
    for (let i = this.head; i < this.head + count; i++) this.bytes -= this.sizes[i]!;
    this.head += count;
    this.released += count;
    if (this.head > 1024 && this.head * 2 > this.events.length) {
      this.events = this.events.slice(this.head);
      this.sizes = this.sizes.slice(this.head);
      this.head = 0;
    }
    return out;
  }
}

const EMPTY: StreamEvent[] = [];
