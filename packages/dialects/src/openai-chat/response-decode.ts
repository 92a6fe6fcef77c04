/**
 * Upstream non-stream `chat.completion` JSON → the same normalized events a stream gives
 * (PROTOCOLS A.3, A.7), so the gate and every encoder have one input form.
 *
 * Order: `response-start`, `reasoning-delta` (`reasoning ?? reasoning_content`), `text-delta`,
 * one `tool-call-delta` per call (index, id, name, whole arguments), `finish` (with vLLM's
 * `stop_reason` as `stopSequence`), then `usage`. A body with an `error` key becomes an `error`
 * event; a body that is not a completion, or has no finish reason, becomes an `upstream_error`.
 */
import { newId, type StreamEvent } from '@iop/core';
import { errorEventFromUpstream } from './errors.js';
import { fromChatFinishReason } from './finish-reason.js';
import { fromChatUsage } from './usage.js';
import type { ChatCompletion } from './wire-types.js';

function upstreamError(message: string): StreamEvent {
  return { type: 'error', code: 'upstream_error', message };
}

/** Decodes one parsed upstream response body; events go to `onEvent` synchronously. Never throws. */
export function decodeChatResponse(body: unknown, onEvent: (event: StreamEvent) => void): void {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    onEvent(upstreamError('upstream sent a chat response that is not a JSON object'));
    return;
  }
  const record = body as Record<string, unknown>;
  if (record.error !== undefined && record.error !== null) {
    onEvent(errorEventFromUpstream(record.error));
    return;
  }
  const completion = body as ChatCompletion;
  const choice = Array.isArray(completion.choices) ? completion.choices.find((c) => c?.index === undefined || c.index === 0) : undefined;
  if (choice === undefined || choice === null) {
    onEvent(upstreamError('upstream chat response has no choices'));
    return;
  }
  onEvent({
    type: 'response-start',
    id: typeof completion.id === 'string' ? completion.id : newId('chatcmpl-'),
    model: typeof completion.model === 'string' ? completion.model : '',
    created: typeof completion.created === 'number' ? completion.created : Math.floor(Date.now() / 1000),
  });
  const message = choice.message;
  if (typeof message === 'object' && message !== null) {
    const reasoning = message.reasoning ?? message.reasoning_content;
    if (typeof reasoning === 'string' && reasoning.length > 0) onEvent({ type: 'reasoning-delta', text: reasoning });
    if (typeof message.content === 'string' && message.content.length > 0) onEvent({ type: 'text-delta', text: message.content });
    if (Array.isArray(message.tool_calls)) {
      message.tool_calls.forEach((call, index) => {
        if (typeof call !== 'object' || call === null) return;
        const fn = call.function as { name?: unknown; arguments?: unknown } | undefined;
        onEvent({
          type: 'tool-call-delta',
          index,
          id: typeof call.id === 'string' && call.id.length > 0 ? call.id : newId('call_'),
          name: typeof fn?.name === 'string' ? fn.name : '',
          // Some servers send arguments as an object; the hub carries the JSON text.
          argumentsDelta: typeof fn?.arguments === 'string' ? fn.arguments : fn?.arguments === undefined ? '' : JSON.stringify(fn.arguments),
        });
      });
    }
  }
  const raw = choice.finish_reason;
  if (typeof raw !== 'string' || raw.length === 0) {
    onEvent(upstreamError('upstream chat response has no finish_reason'));
  } else {
    const stopSequence = typeof choice.stop_reason === 'string' ? choice.stop_reason : choice.matched_stop;
    onEvent(
      typeof stopSequence === 'string'
        ? { type: 'finish', reason: fromChatFinishReason(raw), raw, stopSequence }
        : { type: 'finish', reason: fromChatFinishReason(raw), raw },
    );
  }
  const usage = fromChatUsage(completion.usage);
  if (usage !== undefined) onEvent({ type: 'usage', usage });
}
