/**
 * Normalized stream events → Gemini `streamGenerateContent` chunks (docs/protocols.md "Gemini
 * stream"; https://ai.google.dev/api/generate-content#method:-models.streamgeneratecontent).
 *
 * Every chunk is a complete `GenerateContentResponse` carrying only the new parts, with the same
 * `responseId` and `modelVersion`. With `alt=sse` each is one `data: <json>` line and a blank line
 * — no `event:` or `id:` lines (the SDK drops an event that does not start with `data:`), no
 * `[DONE]` (the stream ends at EOF). Without `alt=sse` the body is one JSON array of the same
 * chunks (`[{…}\n,{…}]`), as Google answers then.
 *
 * - Text deltas go out as `{text}` parts as they come; reasoning as `{text, thought: true}` parts
 *   only when the request set `thinkingConfig.includeThoughts` (otherwise it is dropped, but its
 *   tokens are still counted in `thoughtsTokenCount`).
 * - Tool calls are sent whole (function-calls.ts) in the last chunk, which also carries
 *   `finishReason` and `usageMetadata`: that chunk waits for the usage that follows `finish`
 *   (sent on it, or by `end()`). Every stream that completes ends with a `finishReason` chunk
 *   (Gemini CLI fails a turn without one).
 * - A failure, at any point, is Google's error envelope `{"error":{code, message, status}}` as the
 *   last chunk (an SSE `data:` event, which `@google/genai` 2.x raises as an `ApiError` with that
 *   code; in a JSON array, its last element), and nothing follows it. `end()` without a terminal
 *   event renders `INTERNAL`: a cut stream is never a made-up `STOP`.
 */
import type { EncodeContext, FinishEvent, StreamEncoder, StreamEvent, Usage } from '@iop/core';
import { newId } from '@iop/core';
import { googleErrorBody } from './errors.js';
import { toGeminiFinishReason } from './finish-reason.js';
import { FunctionCallCollector } from './function-calls.js';
import { toUsageMetadata } from './usage.js';
import type { GeminiState, GenerateContentResponse, Part } from './wire-types.js';

type Phase = 'streaming' | 'finished' | 'done';

/** The request's Gemini state (SSE or a JSON array; thoughts), with the defaults of a request decoded elsewhere. */
export function geminiState(context: EncodeContext): GeminiState {
  const state = context.request.dialectState as Partial<GeminiState> | undefined;
  return { sse: state?.sse ?? true, includeThoughts: state?.includeThoughts ?? false };
}

export class GeminiStreamEncoder implements StreamEncoder {
  readonly contentType: string;
  private phase: Phase = 'streaming';
  private readonly state: GeminiState;
  private readonly responseId: string;
  private readonly calls = new FunctionCallCollector();
  private usage: Usage | undefined;
  private finish: FinishEvent | undefined;
  private chunks = 0;

  constructor(private readonly context: EncodeContext) {
    this.state = geminiState(context);
    this.contentType = this.state.sse ? 'text/event-stream; charset=utf-8' : 'application/json; charset=utf-8';
    this.responseId = newId('resp_');
  }

  push(event: StreamEvent): string {
    if (this.phase === 'done') return '';
    switch (event.type) {
      case 'response-start':
        return '';
      case 'text-delta':
        return event.text.length === 0 || this.phase !== 'streaming' ? '' : this.chunk([{ text: event.text }]);
      case 'reasoning-delta':
        if (!this.state.includeThoughts || event.text.length === 0 || this.phase !== 'streaming') return '';
        return this.chunk([{ text: event.text, thought: true }]);
      case 'tool-call-delta':
        if (this.phase === 'streaming') this.calls.push(event);
        return '';
      case 'usage':
        this.usage = event.usage;
        return this.phase === 'finished' ? this.last() : '';
      case 'finish':
        if (this.phase === 'streaming') {
          this.finish = event;
          this.phase = 'finished';
        }
        return '';
      case 'error':
        this.phase = 'done';
        return this.frame(googleErrorBody(event));
    }
  }

  end(): string {
    if (this.phase === 'finished') return this.last() + this.close();
    if (this.phase === 'streaming') {
      this.phase = 'done';
      return (
        this.frame(
          googleErrorBody({
            code: 'upstream_error',
            message: 'the model stream ended before the response was complete',
          }),
        ) + this.close()
      );
    }
    return this.close();
  }

  result(): undefined {
    return undefined;
  }

  /** The last chunk: whole function calls, `finishReason`, `usageMetadata`. */
  private last(): string {
    const { parts, malformed } = this.calls.parts();
    const out = this.chunk(parts, toGeminiFinishReason(this.finish!, malformed));
    this.phase = 'done';
    return out;
  }

  private chunk(parts: Part[], finishReason?: ReturnType<typeof toGeminiFinishReason>): string {
    const response: GenerateContentResponse = {
      candidates: [
        { content: { role: 'model', parts }, ...(finishReason === undefined ? {} : { finishReason }), index: 0 },
      ],
      ...(finishReason === undefined ? {} : { usageMetadata: toUsageMetadata(this.usage) }),
      modelVersion: this.context.model,
      responseId: this.responseId,
    };
    return this.frame(response);
  }

  private frame(body: unknown): string {
    const json = JSON.stringify(body);
    if (this.state.sse) return `data: ${json}\n\n`;
    return `${this.chunks++ === 0 ? '[' : '\n,'}${json}`;
  }

  /** A JSON-array stream's closing bracket (`[]` when nothing was sent). */
  private close(): string {
    if (this.state.sse || this.chunks < 0) return '';
    const out = this.chunks === 0 ? '[]' : '\n]';
    this.chunks = -1;
    return out;
  }
}

export function createGeminiStreamEncoder(context: EncodeContext): StreamEncoder {
  return new GeminiStreamEncoder(context);
}
