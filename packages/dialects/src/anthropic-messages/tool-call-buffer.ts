/**
 * Holds the tool calls that arrive while another tool_use block is open (docs/protocols.md "Responses input and Chat
 * messages", Chat chunks → Anthropic events: tool calls whose fragments interleave by index are buffered until the open
 * block closes). Calls are released in the order their first fragment arrived, each with its arguments joined. It also
 * remembers which upstream indexes already had their block closed, so a late fragment for one of them can be detected
 * rather than misplaced.
 */

export interface BufferedToolCall {
  toolIndex: number;
  id: string | undefined;
  name: string | undefined;
  arguments: string;
}

export class ToolCallBuffer {
  private readonly pending = new Map<number, BufferedToolCall>();
  private readonly closed = new Set<number>();

  /** Adds a fragment of a call whose block cannot open yet. */
  add(toolIndex: number, id: string | undefined, name: string | undefined, argumentsDelta: string): void {
    const call = this.pending.get(toolIndex);
    if (call === undefined) {
      this.pending.set(toolIndex, { toolIndex, id, name, arguments: argumentsDelta });
      return;
    }
    call.id ??= id;
    call.name ??= name;
    call.arguments += argumentsDelta;
  }

  get size(): number {
    return this.pending.size;
  }

  /** Removes and returns the buffered calls, oldest first (Map keeps insertion order). */
  drain(): BufferedToolCall[] {
    const calls = [...this.pending.values()];
    this.pending.clear();
    return calls;
  }

  /** Marks an upstream tool index as finished (its block stopped). */
  markClosed(toolIndex: number): void {
    this.closed.add(toolIndex);
  }

  isClosed(toolIndex: number): boolean {
    return this.closed.has(toolIndex);
  }
}
