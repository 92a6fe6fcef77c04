/**
 * Chat `finish_reason` ↔ the hub's unified finish reason (docs/protocols.md "Chat response", "Finish reasons").
 */
import type { FinishReason } from '@iop/core';

/**
 * Maps an upstream `finish_reason` to the unified value. `function_call` (deprecated) counts as
 * `tool_calls`; `eos` (some llama.cpp builds) and `abort`-less natural ends count as `stop`;
 * anything else is `other` and the caller keeps the raw value.
 */
export function fromChatFinishReason(raw: string): FinishReason {
  switch (raw) {
    case 'stop':
    case 'eos':
    case 'end_turn':
      return 'stop';
    case 'length':
    case 'max_tokens':
      return 'length';
    case 'tool_calls':
    case 'function_call':
      return 'tool_calls';
    case 'content_filter':
      return 'content_filter';
    default:
      return 'other';
  }
}

/**
 * Renders a unified finish reason as a Chat `finish_reason`. `other` has no Chat value: the raw
 * upstream value is kept when it is one of Chat's own, else it becomes `stop` (the stream did end
 * normally).
 */
export function toChatFinishReason(reason: FinishReason, raw: string | null): string {
  if (reason !== 'other') return reason;
  if (raw !== null && fromChatFinishReason(raw) !== 'other') return raw;
  return 'stop';
}
