/**
 * Unified finish reason → Anthropic `stop_reason` + `stop_sequence` (docs/protocols.md "Finish reasons").
 *
 * | finish            | stop_reason                                                    |
 * |-------------------|----------------------------------------------------------------|
 * | `stop`            | `stop_sequence` when the upstream named the matched stop, else `end_turn` |
 * | `length`          | `max_tokens`                                                   |
 * | `tool_calls`      | `tool_use`                                                     |
 * | `content_filter`  | `refusal`                                                      |
 * | `other`           | `end_turn` (the raw value is unknown to Anthropic clients)     |
 *
 * Some backends (Ollama, older llama.cpp) end a turn that called tools with `stop`; Anthropic
 * clients decide whether to run tools by `stop_reason: "tool_use"`, so a turn that produced a
 * tool_use block and ended naturally is reported as `tool_use`.
 */
import type { FinishEvent } from '@iop/core';
import type { StopReason } from './wire-types.js';

export interface AnthropicStop {
  stop_reason: StopReason;
  stop_sequence: string | null;
}

/** Maps a `finish` event; `calledTools` is whether the output holds at least one tool_use block. */
export function toAnthropicStop(finish: FinishEvent, calledTools: boolean): AnthropicStop {
  switch (finish.reason) {
    case 'length':
      return { stop_reason: 'max_tokens', stop_sequence: null };
    case 'tool_calls':
      return { stop_reason: 'tool_use', stop_sequence: null };
    case 'content_filter':
      return { stop_reason: 'refusal', stop_sequence: null };
    case 'stop':
    case 'other':
      if (calledTools) return { stop_reason: 'tool_use', stop_sequence: null };
      if (finish.reason === 'stop' && finish.stopSequence !== undefined) {
        return { stop_reason: 'stop_sequence', stop_sequence: finish.stopSequence };
      }
      return { stop_reason: 'end_turn', stop_sequence: null };
  }
}
