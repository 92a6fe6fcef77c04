/**
 * The complete event list → one non-stream `GenerateContentResponse` (docs/protocols.md "Gemini
 * response"; https://ai.google.dev/api/generate-content#generatecontentresponse): one candidate
 * whose parts are, in the model's order, a `{text, thought: true}` part per run of reasoning (only
 * with `includeThoughts`), a `{text}` part per run of text, then the whole function calls;
 * `finishReason`, `usageMetadata`, `modelVersion` (the model the client asked for) and `responseId`.
 */
import type { EncodeContext, FinishEvent, StreamEvent, Usage } from '@iop/core';
import { IopError, iopErrorOf, newId } from '@iop/core';
import { toGeminiFinishReason } from './finish-reason.js';
import { FunctionCallCollector } from './function-calls.js';
import { geminiState } from './stream-encode.js';
import { toUsageMetadata } from './usage.js';
import type { GenerateContentResponse, Part } from './wire-types.js';

/**
 * @throws IopError the stream's own error when it ended in an `error` event; `upstream_error`
 *   when it has no terminal event.
 */
export function encodeGeminiResponse(events: readonly StreamEvent[], context: EncodeContext): GenerateContentResponse {
  const { includeThoughts } = geminiState(context);
  const parts: Part[] = [];
  const calls = new FunctionCallCollector();
  let last: Part | undefined;
  let usage: Usage | undefined;
  let finish: FinishEvent | undefined;
  const append = (text: string, thought: boolean) => {
    if (text.length === 0) return;
    if (last !== undefined && (last.thought === true) === thought) last.text += text;
    else parts.push((last = thought ? { text, thought: true } : { text }));
  };
  for (const event of events) {
    switch (event.type) {
      case 'text-delta':
        append(event.text, false);
        break;
      case 'reasoning-delta':
        if (includeThoughts) append(event.text, true);
        break;
      case 'tool-call-delta':
        calls.push(event);
        break;
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
  if (finish === undefined)
    throw new IopError('upstream_error', 'the model stream ended before the response was complete');
  const functionCalls = calls.parts();
  parts.push(...functionCalls.parts);
  return {
    candidates: [
      {
        content: { role: 'model', parts },
        finishReason: toGeminiFinishReason(finish, functionCalls.malformed),
        index: 0,
      },
    ],
    usageMetadata: toUsageMetadata(usage),
    modelVersion: context.model,
    responseId: newId('resp_'),
  };
}
