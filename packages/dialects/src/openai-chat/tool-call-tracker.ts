/**
 * Streaming tool-call tracker: turns Chat `delta.tool_calls[]` fragments into `tool-call-delta`
 * events that keep the hub's order guarantee (a call's first event carries `id` and `name`, later
 * ones only `argumentsDelta`; PROTOCOLS A.4).
 *
 * Upstream quirks it absorbs: `index` missing (the fragment's position in the array is used);
 * `id`/`name` repeated on every fragment (sent once); `id` missing (a `call_…` id is minted);
 * argument fragments that arrive before the name (held until the name comes, or until `flush`).
 */
import { newId, type StreamEvent, type ToolCallDeltaEvent } from '@iop/core';
import type { ChatToolCallDelta } from './wire-types.js';

interface CallState {
  id: string | undefined;
  /** Set once the first event (with id and name) went out. */
  announced: boolean;
  /** Arguments received before the name. */
  pendingArguments: string;
}

export class ToolCallTracker {
  private readonly calls = new Map<number, CallState>();

  constructor(private readonly onEvent: (event: StreamEvent) => void) {}

  /** One fragment; `position` is its place in `delta.tool_calls` (fallback for a missing `index`). */
  push(fragment: ChatToolCallDelta, position: number): void {
    const index = typeof fragment.index === 'number' && Number.isSafeInteger(fragment.index) && fragment.index >= 0 ? fragment.index : position;
    const fn = fragment.function;
    const argumentsDelta = typeof fn?.arguments === 'string' ? fn.arguments : '';
    let call = this.calls.get(index);
    if (call === undefined) {
      call = { id: undefined, announced: false, pendingArguments: '' };
      this.calls.set(index, call);
    }
    if (call.announced) {
      if (argumentsDelta.length > 0) this.onEvent({ type: 'tool-call-delta', index, argumentsDelta });
      return;
    }
    if (typeof fragment.id === 'string' && fragment.id.length > 0) call.id = fragment.id;
    const name = typeof fn?.name === 'string' && fn.name.length > 0 ? fn.name : undefined;
    if (name === undefined) {
      call.pendingArguments += argumentsDelta;
      return;
    }
    this.announce(index, call, name, argumentsDelta);
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
