/**
 * Tool-call fragments → whole Gemini `functionCall` parts. The Gemini API streams no arguments: a
 * `functionCall` part carries a complete `name` and `args` object, and Gemini CLI counts every
 * `functionCall` of every chunk as a call (docs/protocols.md "Gemini stream"), so fragments are
 * collected by upstream index and each call is sent once, whole, in the order it first appeared.
 * The call's id is kept (`call_…` from the backend) so the client can send it back in `functionResponse.id`.
 */
import type { ToolCallDeltaEvent } from '@iop/core';
import { newId } from '@iop/core';
import { isObject } from '../shared/fields.js';
import type { Part } from './wire-types.js';

interface PendingCall {
  id: string;
  name: string;
  arguments: string;
}

export class FunctionCallCollector {
  private readonly calls = new Map<number, PendingCall>();

  push(event: ToolCallDeltaEvent): void {
    const call = this.calls.get(event.index);
    if (call === undefined)
      this.calls.set(event.index, {
        id: event.id ?? newId('call_'),
        name: event.name ?? '',
        arguments: event.argumentsDelta,
      });
    else call.arguments += event.argumentsDelta;
  }

  get size(): number {
    return this.calls.size;
  }

  /**
   * The collected calls as parts. `malformed` is true when a call's arguments are not a JSON
   * object (`""` stands for `{}`); such a call is left out.
   */
  parts(): { parts: Part[]; malformed: boolean } {
    const parts: Part[] = [];
    let malformed = false;
    for (const call of this.calls.values()) {
      const args = parseArgs(call.arguments);
      if (args === undefined) malformed = true;
      else parts.push({ functionCall: { id: call.id, name: call.name, args } });
    }
    return { parts, malformed };
  }
}

function parseArgs(json: string): Record<string, unknown> | undefined {
  if (json.trim().length === 0) return {};
  try {
    const value: unknown = JSON.parse(json);
    return isObject(value) ? value : undefined;
  } catch {
    return undefined;
  }
}
