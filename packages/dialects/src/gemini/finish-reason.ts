/**
 * The hub's finish reason → Gemini `finishReason` (docs/protocols.md "Gemini ↔ Chat mapping"):
 *
 * | finish           | finishReason |
 * |------------------|--------------|
 * | `stop`, `tool_calls` | `STOP` (Gemini has no tool-call reason; the `functionCall` parts say it) |
 * | `length`         | `MAX_TOKENS` |
 * | `content_filter` | `SAFETY`     |
 * | `other`          | `OTHER`      |
 *
 * A turn whose tool-call arguments are not a JSON object (which the stream gate normally re-asks
 * before this point) is `MALFORMED_FUNCTION_CALL`, Google's own reason for it, with the call left out.
 */
import type { FinishEvent } from '@iop/core';
import type { GeminiFinishReason } from './wire-types.js';

export function toGeminiFinishReason(finish: FinishEvent, malformedCall: boolean): GeminiFinishReason {
  if (malformedCall && finish.reason !== 'length') return 'MALFORMED_FUNCTION_CALL';
  switch (finish.reason) {
    case 'stop':
    case 'tool_calls':
      return 'STOP';
    case 'length':
      return 'MAX_TOKENS';
    case 'content_filter':
      return 'SAFETY';
    case 'other':
      return 'OTHER';
  }
}
