/**
 * Checks on the tool calls and tool results a client replays in its conversation history, shared by the dialects
 * (docs/protocols.md "Tool calls and ids", "Tool results"). Backends turn history arguments back into objects for their
 * chat templates (vLLM parses `function.arguments` with `json.loads`), so a broken replay is a 400 naming the field
 * here rather than an opaque backend failure.
 */
import { invalidRequest } from '@iop/core';
import { isObject } from './fields.js';

/**
 * Validates replayed tool-call arguments: a JSON object, or `""` (which stands for `{}`, docs/protocols.md "Tool calls
 * and ids").
 * @throws IopError `invalid_request` (400) with `param` set to the arguments field.
 */
export function checkToolArguments(args: string, param: string): void {
  if (args.length === 0) return;
  let value: unknown;
  try {
    value = JSON.parse(args);
  } catch {
    throw invalidRequest(`${param} must be a JSON object encoded as a string; it is not valid JSON`, param);
  }
  if (!isObject(value)) {
    throw invalidRequest(
      `${param} must be a JSON object encoded as a string, got ${value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value}`,
      param,
    );
  }
}

/**
 * The tool-call ids made so far in a conversation, to check that every tool result answers one
 * (docs/protocols.md "Tool results"; OpenAI and Anthropic both reject an orphan result). A result may
 * answer any earlier call, not only the latest assistant turn, so reordered histories still pass.
 */
export class ToolCallIds {
  private readonly ids = new Set<string>();

  add(id: string): void {
    this.ids.add(id);
  }

  has(id: string): boolean {
    return this.ids.has(id);
  }

  /**
   * @throws IopError `invalid_request` (400) when no earlier tool call has this id.
   * @param what how the dialect names the call, e.g. `tool_use block` or `assistant tool call`.
   */
  expect(id: string, param: string, what: string): void {
    if (!this.ids.has(id))
      throw invalidRequest(
        `${param}: no earlier ${what} has the id ${JSON.stringify(id.length > 80 ? `${id.slice(0, 80)}…` : id)}`,
        param,
      );
  }
}
