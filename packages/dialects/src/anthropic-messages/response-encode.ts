/**
 * The complete event list → a non-stream Anthropic `Message` (docs/protocols.md "Messages response").
 *
 * Blocks appear in the order the model produced them: consecutive reasoning deltas form one `thinking` block,
 * consecutive text deltas one `text` block, and each tool call (by upstream index) one `tool_use` block at the position
 * of its first fragment.
 *
 * Tool arguments: the JSON string becomes the `input` object (`""` → `{}`, docs/protocols.md "Tool calls and ids").
 * Arguments that do not parse to a JSON object cannot be shown to an Anthropic client, whose `input` must be an object;
 * the stream gate normally re-asks the model before this point, so reaching it means the upstream answered garbage:
 * `upstream_error` (502, which the SDK retries), never a silent `{}` that would run the tool with missing arguments. A
 * turn cut by the output limit (`max_tokens`) is the exception: its last call is cut short, and its block keeps the
 * position with `input: {}` (no client runs the tools of a `max_tokens` turn).
 */
import type { EncodeContext, FinishEvent, StreamEvent, Usage } from '@iop/core';
import { IopError, iopErrorOf, newId } from '@iop/core';
import { toAnthropicStop } from './finish-reason.js';
import { UNSIGNED_THINKING_SIGNATURE } from './stream-encode.js';
import { toAnthropicUsage } from './usage.js';
import type { AnthropicMessage, ContentBlock, TextBlock, ThinkingBlock, ToolUseBlock } from './wire-types.js';
import { isObject } from '../shared/fields.js';

interface ToolCallState {
  block: ToolUseBlock;
  arguments: string;
}

/** Parses a tool call's arguments into Anthropic's `input` object. @throws IopError `upstream_error`. */
export function parseToolInput(name: string, argumentsJson: string): Record<string, unknown> {
  if (argumentsJson.trim().length === 0) return {};
  let input: unknown;
  try {
    input = JSON.parse(argumentsJson);
  } catch (cause) {
    throw new IopError('upstream_error', `the model produced invalid JSON arguments for tool '${name}'`, { cause });
  }
  if (!isObject(input)) {
    throw new IopError('upstream_error', `the model produced arguments for tool '${name}' that are not a JSON object`);
  }
  return input;
}

/**
 * Builds the Message.
 * @throws IopError the stream's own error when it ended in an `error` event; `upstream_error`
 *   when it has no terminal event or a tool call's arguments are not a JSON object.
 */
export function encodeResponse(events: readonly StreamEvent[], context: EncodeContext): AnthropicMessage {
  const content: ContentBlock[] = [];
  const toolCalls = new Map<number, ToolCallState>();
  let last: ContentBlock | undefined;
  let usage: Usage | undefined;
  let finish: FinishEvent | undefined;

  for (const event of events) {
    switch (event.type) {
      case 'text-delta':
        if (event.text.length === 0) break;
        if (last?.type === 'text') {
          last.text += event.text;
        } else {
          const block: TextBlock = { type: 'text', text: event.text, citations: null };
          content.push(block);
          last = block;
        }
        break;
      case 'reasoning-delta': {
        // Thinking blocks only when the request enabled thinking (as in the stream encoder).
        if (context.request.reasoning?.enabled !== true) break;
        if (last?.type !== 'thinking') {
          if (event.text.length === 0) break;
          const block: ThinkingBlock = { type: 'thinking', thinking: '', signature: '' };
          content.push(block);
          last = block;
        }
        // `thinking.display: "omitted"`: the block without its text, signature kept.
        if (context.request.reasoning?.display !== 'omitted') last.thinking += event.text;
        if (event.signature) last.signature = event.signature;
        break;
      }
      case 'tool-call-delta': {
        const call = toolCalls.get(event.index);
        if (call === undefined) {
          const block: ToolUseBlock = {
            type: 'tool_use',
            id: event.id ?? newId('toolu_'),
            name: event.name ?? '',
            input: {},
          };
          toolCalls.set(event.index, { block, arguments: event.argumentsDelta });
          content.push(block);
          last = block;
        } else {
          call.arguments += event.argumentsDelta;
        }
        break;
      }
      case 'usage':
        usage = event.usage;
        break;
      case 'finish':
        finish ??= event;
        break;
      case 'error':
        throw iopErrorOf(event);
      case 'response-start':
        break;
    }
  }
  if (finish === undefined) {
    throw new IopError('upstream_error', 'the model stream ended before the response was complete');
  }
  for (const block of content) {
    if (block.type === 'thinking' && block.signature === '') block.signature = UNSIGNED_THINKING_SIGNATURE;
  }
  for (const call of toolCalls.values()) {
    if (finish.reason !== 'length') call.block.input = parseToolInput(call.block.name, call.arguments);
    else {
      try {
        call.block.input = parseToolInput(call.block.name, call.arguments);
      } catch {
        call.block.input = {};
      }
    }
  }
  const stop = toAnthropicStop(finish, toolCalls.size > 0);
  return {
    id: newId('msg_'),
    type: 'message',
    role: 'assistant',
    model: context.model,
    content,
    stop_reason: stop.stop_reason,
    stop_sequence: stop.stop_sequence,
    usage: toAnthropicUsage(usage),
  };
}
