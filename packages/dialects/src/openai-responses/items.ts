/**
 * The output item tracker: hub deltas → Responses output items and their item-scoped stream
 * events, in the grammar openai-node's `ResponseStream` accumulates (docs/protocols.md "Responses stream"; openai v6
 * `lib/responses/ResponseAccumulator.ts`).
 *
 * - Items are appended to `output` in order; every event names `output_index` and `item_id` of
 *   the item at that index. Ids: `msg_…`, `rs_…`, `fc_…`, `ctc_…`.
 * - A message or reasoning item stays open until any other item starts; tool calls stay open
 *   (fragments keyed by the upstream `index`) until text or reasoning starts or the response ends.
 * - Reasoning: `content_part.added` `{type:"reasoning_text", text:""}`, `reasoning_text.delta`
 *   ×N, `.done`, `content_part.done`. Text: `output_text` part with `annotations:[]`,
 *   `logprobs:[]`.
 * - Function calls stream their argument fragments as they arrive. Custom tool calls (backend
 *   arguments `{"input":"…"}`) are buffered and emitted at close as one
 *   `custom_tool_call_input.delta` and `.done` with the decoded text.
 */
import { newId, type ToolCallDeltaEvent, type ToolDefinition, type ToolOrigin } from '@iop/core';
import type {
  CustomToolCallItem,
  FunctionCallItem,
  ItemStatus,
  MessageItem,
  OutputItem,
  OutputTextPart,
  ReasoningItem,
  ReasoningTextPart,
} from './wire-types.js';

/** One item-scoped wire event, before the encoder stamps its `sequence_number`. */
export type WireEvent = { type: string } & Record<string, unknown>;
export type EmitWire = (event: WireEvent) => void;

type OpenCall =
  { item: FunctionCallItem; outputIndex: number } | { item: CustomToolCallItem; outputIndex: number; buffer: string };
type OpenBlock =
  | { kind: 'message'; item: MessageItem; part: OutputTextPart; outputIndex: number }
  | { kind: 'reasoning'; item: ReasoningItem; part: ReasoningTextPart; outputIndex: number };

/**
 * The free-form input of a custom tool call from the backend's `{"input":"…"}` arguments (the raw text when they are
 * not that shape).
 */
export function customToolInput(args: string): string {
  try {
    const parsed: unknown = JSON.parse(args);
    if (typeof parsed === 'object' && parsed !== null && typeof (parsed as { input?: unknown }).input === 'string')
      return (parsed as { input: string }).input;
  } catch {
    // not JSON: the model wrote the input as is
  }
  return args;
}

export class OutputTracker {
  readonly output: OutputItem[] = [];
  private block: OpenBlock | undefined;
  private readonly calls = new Map<number, OpenCall>();
  private readonly origins = new Map<string, ToolOrigin>();

  constructor(
    private readonly emit: EmitWire,
    tools: readonly ToolDefinition[] | undefined,
  ) {
    if (tools !== undefined)
      for (const tool of tools) if (tool.origin !== undefined) this.origins.set(tool.name, tool.origin);
  }

  text(delta: string): void {
    if (delta.length === 0) return;
    const block = this.block?.kind === 'message' ? this.block : this.openMessage();
    block.part.text += delta;
    this.emit({
      type: 'response.output_text.delta',
      item_id: block.item.id,
      output_index: block.outputIndex,
      content_index: 0,
      delta,
      logprobs: [],
    });
  }

  reasoning(delta: string, signature: string | undefined): void {
    const block = this.block?.kind === 'reasoning' ? this.block : delta.length > 0 ? this.openReasoning() : undefined;
    if (block === undefined) return;
    if (signature !== undefined) block.item.encrypted_content = signature;
    if (delta.length === 0) return;
    block.part.text += delta;
    this.emit({
      type: 'response.reasoning_text.delta',
      item_id: block.item.id,
      output_index: block.outputIndex,
      content_index: 0,
      delta,
    });
  }

  toolCall(event: ToolCallDeltaEvent): void {
    let call = this.calls.get(event.index);
    if (call === undefined) {
      // a fragment of a call already closed, or with no name yet: nothing valid to attach it to
      if (event.name === undefined) return;
      this.closeBlock('completed');
      call = this.openCall(event);
    }
    if (event.argumentsDelta.length === 0) return;
    if ('buffer' in call) {
      call.buffer += event.argumentsDelta;
      return;
    }
    call.item.arguments += event.argumentsDelta;
    this.emit({
      type: 'response.function_call_arguments.delta',
      item_id: call.item.id,
      output_index: call.outputIndex,
      delta: event.argumentsDelta,
    });
  }

  /** Closes every open item with `status` (`incomplete` when the output was cut). */
  closeAll(status: ItemStatus): void {
    this.closeBlock(status);
    this.closeCalls(status);
  }

  private push(item: OutputItem): number {
    const outputIndex = this.output.length;
    this.output.push(item);
    this.emit({ type: 'response.output_item.added', output_index: outputIndex, item });
    return outputIndex;
  }

  private openMessage(): OpenBlock & { kind: 'message' } {
    this.closeAll('completed');
    const item: MessageItem = {
      type: 'message',
      id: newId('msg_'),
      role: 'assistant',
      status: 'in_progress',
      content: [],
    };
    const outputIndex = this.push(item);
    const part: OutputTextPart = { type: 'output_text', text: '', annotations: [], logprobs: [] };
    this.emit({
      type: 'response.content_part.added',
      item_id: item.id,
      output_index: outputIndex,
      content_index: 0,
      part,
    });
    item.content.push(part);
    const block = { kind: 'message' as const, item, part, outputIndex };
    this.block = block;
    return block;
  }

  private openReasoning(): OpenBlock & { kind: 'reasoning' } {
    this.closeAll('completed');
    const item: ReasoningItem = { type: 'reasoning', id: newId('rs_'), summary: [], status: 'in_progress' };
    const outputIndex = this.push(item);
    const part: ReasoningTextPart = { type: 'reasoning_text', text: '' };
    this.emit({
      type: 'response.content_part.added',
      item_id: item.id,
      output_index: outputIndex,
      content_index: 0,
      part,
    });
    item.content = [part];
    const block = { kind: 'reasoning' as const, item, part, outputIndex };
    this.block = block;
    return block;
  }

  private openCall(event: ToolCallDeltaEvent): OpenCall {
    const backendName = event.name!;
    const origin = this.origins.get(backendName);
    const callId = event.id !== undefined && event.id.length > 0 ? event.id : newId('call_');
    let call: OpenCall;
    if (origin?.kind === 'custom') {
      const item: CustomToolCallItem = {
        type: 'custom_tool_call',
        id: newId('ctc_'),
        call_id: callId,
        name: origin.name ?? backendName,
        input: '',
        status: 'in_progress',
      };
      if (origin.namespace !== undefined) item.namespace = origin.namespace;
      call = { item, outputIndex: this.push(item), buffer: '' };
    } else {
      const item: FunctionCallItem = {
        type: 'function_call',
        id: newId('fc_'),
        call_id: callId,
        name: origin?.kind === 'namespace' ? origin.name : backendName,
        arguments: '',
        status: 'in_progress',
      };
      if (origin?.kind === 'namespace') item.namespace = origin.namespace;
      call = { item, outputIndex: this.push(item) };
    }
    this.calls.set(event.index, call);
    return call;
  }

  private closeBlock(status: ItemStatus): void {
    const block = this.block;
    if (block === undefined) return;
    this.block = undefined;
    const { item, part, outputIndex } = block;
    if (block.kind === 'message') {
      this.emit({
        type: 'response.output_text.done',
        item_id: item.id,
        output_index: outputIndex,
        content_index: 0,
        text: part.text,
        logprobs: [],
      });
    } else {
      this.emit({
        type: 'response.reasoning_text.done',
        item_id: item.id,
        output_index: outputIndex,
        content_index: 0,
        text: part.text,
      });
    }
    this.emit({
      type: 'response.content_part.done',
      item_id: item.id,
      output_index: outputIndex,
      content_index: 0,
      part,
    });
    item.status = status;
    this.emit({ type: 'response.output_item.done', output_index: outputIndex, item });
  }

  private closeCalls(status: ItemStatus): void {
    if (this.calls.size === 0) return;
    const open = [...this.calls.values()].sort((a, b) => a.outputIndex - b.outputIndex);
    this.calls.clear();
    for (const call of open) {
      const { item, outputIndex } = call;
      if ('buffer' in call) {
        const input = customToolInput(call.buffer);
        call.item.input = input;
        if (input.length > 0)
          this.emit({
            type: 'response.custom_tool_call_input.delta',
            item_id: item.id,
            output_index: outputIndex,
            delta: input,
          });
        this.emit({ type: 'response.custom_tool_call_input.done', item_id: item.id, output_index: outputIndex, input });
      } else {
        this.emit({
          type: 'response.function_call_arguments.done',
          item_id: item.id,
          output_index: outputIndex,
          name: call.item.name,
          arguments: call.item.arguments,
        });
      }
      item.status = status;
      this.emit({ type: 'response.output_item.done', output_index: outputIndex, item });
    }
  }
}
