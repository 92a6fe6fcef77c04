/**
 * The complete event list → a non-stream `chat.completion` body (docs/protocols.md "Chat response").
 * `content` is null when the answer is tool calls only; reasoning goes to
 * `message.reasoning_content` (vLLM convention) when there is any; `usage` is always present
 * (unknown counts as 0, the wire type requires the numbers).
 */
import {
  IopError,
  iopErrorOf,
  newId,
  type EncodeContext,
  type FinishEvent,
  type StreamEvent,
  type Usage,
} from '@iop/core';
import { toChatFinishReason } from './finish-reason.js';
import { toChatUsage } from './usage.js';
import type { ChatToolCall, ChatUsage } from './wire-types.js';

export interface ChatCompletionBody {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: Array<{
    index: 0;
    message: {
      role: 'assistant';
      content: string | null;
      refusal: null;
      tool_calls?: ChatToolCall[];
      reasoning_content?: string;
    };
    finish_reason: string;
    logprobs: null;
  }>;
  usage: ChatUsage;
}

/**
 * @throws IopError when the events end in an `error` event (its code, message and status), or
 * have no `finish` (`upstream_error`).
 */
export function encodeChatResponse(events: readonly StreamEvent[], context: EncodeContext): ChatCompletionBody {
  let text = '';
  let reasoning = '';
  const calls = new Map<number, ChatToolCall>();
  let finish: FinishEvent | undefined;
  let usage: Usage | undefined;
  for (const event of events) {
    switch (event.type) {
      case 'text-delta':
        if (finish === undefined) text += event.text;
        break;
      case 'reasoning-delta':
        if (finish === undefined) reasoning += event.text;
        break;
      case 'tool-call-delta': {
        if (finish !== undefined) break;
        const call = calls.get(event.index);
        if (call === undefined) {
          calls.set(event.index, {
            id: event.id ?? newId('call_'),
            type: 'function',
            function: { name: event.name ?? '', arguments: event.argumentsDelta },
          });
        } else call.function.arguments += event.argumentsDelta;
        break;
      }
      case 'usage':
        usage = event.usage;
        break;
      case 'finish':
        finish ??= event;
        break;
      case 'error':
        if (finish === undefined) throw iopErrorOf(event);
        break;
      case 'response-start':
        break;
    }
  }
  if (finish === undefined) throw new IopError('upstream_error', 'the upstream response ended without a finish reason');
  const toolCalls = [...calls.values()];
  const message: ChatCompletionBody['choices'][number]['message'] = {
    role: 'assistant',
    content: text.length > 0 || toolCalls.length === 0 ? text : null,
    refusal: null,
  };
  if (toolCalls.length > 0) message.tool_calls = toolCalls;
  if (reasoning.length > 0) message.reasoning_content = reasoning;
  return {
    id: newId('chatcmpl-'),
    object: 'chat.completion',
    created: context.createdAt,
    model: context.model,
    choices: [{ index: 0, message, finish_reason: toChatFinishReason(finish.reason, finish.raw), logprobs: null }],
    usage: toChatUsage(usage ?? {}),
  };
}
