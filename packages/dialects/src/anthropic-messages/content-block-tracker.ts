/**
 * Content-block index allocator for an Anthropic message stream (docs/protocols.md "Messages stream").
 *
 * The SDK's `MessageStream` pushes a block on every `content_block_start` and finds it again by
 * `index`, and its convenience events read the last block: so indexes must be 0, 1, 2… in start
 * order with no gaps, and a block must stop before the next one starts. This tracker hands out
 * the indexes and knows the one open block (if any); it never lets two blocks be open at once.
 */

export type OpenBlock =
  | { kind: 'thinking'; index: number; signature: string | undefined }
  | { kind: 'text'; index: number }
  | { kind: 'tool_use'; index: number; toolIndex: number };

export type BlockKind = OpenBlock['kind'];

export class ContentBlockTracker {
  private nextIndex = 0;
  private openBlock: OpenBlock | undefined;
  private toolBlocks = 0;

  /** The open block, or undefined between blocks. */
  get current(): OpenBlock | undefined {
    return this.openBlock;
  }

  /** How many tool_use blocks were started. */
  get toolUseCount(): number {
    return this.toolBlocks;
  }

  /** Opens a thinking block; returns its index. @throws Error when a block is still open (a bug). */
  openThinking(): number {
    return this.open({ kind: 'thinking', index: this.nextIndex, signature: undefined });
  }

  openText(): number {
    return this.open({ kind: 'text', index: this.nextIndex });
  }

  /** Opens a tool_use block for the upstream tool call `toolIndex` (Chat `tool_calls[].index`). */
  openToolUse(toolIndex: number): number {
    this.toolBlocks++;
    return this.open({ kind: 'tool_use', index: this.nextIndex, toolIndex });
  }

  /** Closes the open block and returns it (undefined when none was open). */
  close(): OpenBlock | undefined {
    const block = this.openBlock;
    this.openBlock = undefined;
    return block;
  }

  private open(block: OpenBlock): number {
    if (this.openBlock !== undefined) throw new Error(`content block ${this.openBlock.index} is still open`);
    this.openBlock = block;
    this.nextIndex++;
    return block.index;
  }
}
