/**
 * The decoder of a Chat stream's tool calls: turns `delta.tool_calls[]` fragments into the hub's `tool-call-delta`
 * events that keep the hub's order guarantee (a call's first event carries `id` and `name`, later
 * ones only `argumentsDelta`; docs/protocols.md "Chat stream").
 *
 * Upstream quirks it absorbs: `index` missing (the fragment's position in the array is used);
 * `id`/`name` repeated on every fragment (sent once); `id` missing (a `call_…` id is minted);
 * argument fragments that arrive before the name (held until the name comes, or until `flush`);
 * a second call announced at an index already used, with another `id` (Ollama sends every call
 * of a turn at `index: 0`, ollama/ollama#15457): a new call; `arguments` sent as a JSON object
 * instead of a string (llama.cpp server, Ollama): serialized.
 *
 * A call keeps the upstream's index; a call announced at a reused index gets the next index no
 * call has. Fragments of different calls may interleave.
 */
import { newId, type StreamEvent, type ToolCallDeltaEvent } from '@iop/core';
import type { ChatToolCallDelta } from './wire-types.js';

interface CallState {
  id: string | undefined;
  /** The id the upstream gave (not a minted one): another id at the same index is another call. */
  upstreamId: string | undefined;
  /** Set once the first event (with id and name) went out. */
  announced: boolean;
  /** Arguments received before the name. */
  pendingArguments: string;
}

interface Slot {
  /** The hub index of the call that owns this upstream index now. */
  hubIndex: number;
  call: CallState;
}

export class ToolCallDeltaDecoder {
  /** By upstream index. */
  private readonly slots = new Map<number, Slot>();
  /** Every call, by hub index (for `flush`). */
  private readonly calls = new Map<number, CallState>();

  constructor(private readonly onEvent: (event: StreamEvent) => void) {}

  /** One fragment; `position` is its place in `delta.tool_calls` (fallback for a missing `index`). */
  push(fragment: ChatToolCallDelta, position: number): void {
    const upstreamIndex =
      typeof fragment.index === 'number' && Number.isSafeInteger(fragment.index) && fragment.index >= 0
        ? fragment.index
        : position;
    const fn = fragment.function;
    const rawArguments: unknown = fn?.arguments;
    const argumentsDelta =
      typeof rawArguments === 'string'
        ? rawArguments
        : typeof rawArguments === 'object' && rawArguments !== null
          ? JSON.stringify(rawArguments)
          : '';
    const id = typeof fragment.id === 'string' && fragment.id.length > 0 ? fragment.id : undefined;
    let slot = this.slots.get(upstreamIndex);
    if (slot === undefined || (id !== undefined && slot.call.upstreamId !== undefined && slot.call.upstreamId !== id)) {
      // The upstream's index when it is free; a reused index (another id) gets the next free one.
      const hubIndex = slot === undefined && !this.calls.has(upstreamIndex) ? upstreamIndex : this.nextFree();
      slot = { hubIndex, call: { id: undefined, upstreamId: undefined, announced: false, pendingArguments: '' } };
      this.slots.set(upstreamIndex, slot);
      this.calls.set(slot.hubIndex, slot.call);
    }
    const { call, hubIndex: index } = slot;
    if (id !== undefined) call.upstreamId ??= id;
    if (call.announced) {
      if (argumentsDelta.length > 0) this.onEvent({ type: 'tool-call-delta', index, argumentsDelta });
      return;
    }
    if (id !== undefined) call.id ??= id;
    const name = typeof fn?.name === 'string' && fn.name.length > 0 ? fn.name : undefined;
    if (name === undefined) {
      call.pendingArguments += argumentsDelta;
      return;
    }
    this.announce(index, call, name, argumentsDelta);
  }

  private nextFree(): number {
    let max = -1;
    for (const index of this.calls.keys()) if (index > max) max = index;
    return max + 1;
  }

  /** End of the tool calls (finish): a call that never got a name is announced with name "". */
  flush(): void {
    for (const [index, call] of this.calls) {
      if (!call.announced) this.announce(index, call, '', '');
    }
  }

  private announce(index: number, call: CallState, name: string, argumentsDelta: string): void {
    call.announced = true;
    call.id ??= newId('call_');
    const event: ToolCallDeltaEvent = {
      type: 'tool-call-delta',
      index,
      id: call.id,
      name,
      argumentsDelta: call.pendingArguments + argumentsDelta,
    };
    call.pendingArguments = '';
    this.onEvent(event);
  }
}
