/**
 * Upstream Chat Completions SSE (vLLM, SGLang, llama.cpp server, Ollama, the embedded backend) →
 * normalized `StreamEvent`s (docs/protocols.md "Chat stream", "Backend extras").
 *
 * - SSE framing is `SseReader`'s (any split, LF/CR/CRLF); each event's data is parsed once, and read as the backend's
 *   wire says (`@iop/backend-wire`: `[DONE]`, a chunk or the backend's error; the usage object), as the passthrough
 *   path reads it.
 * - `response-start` comes from the first chunk (id, model, created), role or not.
 * - Reasoning is `delta.reasoning ?? delta.reasoning_content` (vLLM current / older).
 * - Tool calls: fragments keyed by `index`; the first fragment of a call carries id and name.
 * - Usage: from any chunk carrying `usage` (trailing `choices: []`, `choices: null`, no
 *   `choices`, or `continuous_usage_stats` on every chunk). Usage seen before the terminal event
 *   is held (last wins) and emitted right after it; usage after it is emitted at once.
 * - The matched stop string, vLLM's `choices[].stop_reason` or SGLang's `matched_stop` (an integer
 *   there is a stop token id, not a string) → `finish.stopSequence`.
 * - An in-stream `{"error":{…}}` (or an SSE `event: error`) → `error` event; malformed JSON →
 *   `error` (`upstream_error`) with a short excerpt; `[DONE]` or `end()` without a finish
 *   reason → `error`. After the terminal event only usage passes; after `[DONE]` nothing.
 * - `push` never throws.
 */
import { chatUsageOf, classifyChunk, parseChunkData } from '@iop/backend-wire';
import {
  SseReader,
  newId,
  type ErrorEvent,
  type SseEvent,
  type StreamEvent,
  type UpstreamDecoder,
  type Usage,
} from '@iop/core';
import { fromChatFinishReason } from './finish-reason.js';
import { ToolCallDeltaDecoder } from './tool-call-decode.js';
import type { ChatChunkChoice, ChatCompletionChunk } from './wire-types.js';

/** Characters of a malformed event quoted in the error message. */
const EXCERPT_CHARS = 120;

type Phase = 'open' | 'terminal' | 'done';

class ChatStreamDecoder implements UpstreamDecoder {
  private readonly reader: SseReader;
  private readonly toolCalls: ToolCallDeltaDecoder;
  private phase: Phase = 'open';
  private started = false;
  private heldUsage: Usage | undefined;

  constructor(private readonly onEvent: (event: StreamEvent) => void) {
    this.reader = new SseReader((event) => this.onSseEvent(event));
    this.toolCalls = new ToolCallDeltaDecoder(onEvent);
  }

  push(chunk: Uint8Array): void {
    if (this.phase === 'done') return;
    try {
      this.reader.pushBytes(chunk);
    } catch (error) {
      // The reader does not throw on bad input; a consumer callback might. Report it once, in band.
      try {
        this.fail(
          'upstream_error',
          `failed to decode the upstream chat stream: ${error instanceof Error ? error.message : String(error)}`,
        );
      } catch {
        this.phase = 'done';
      }
    }
  }

  end(): void {
    if (this.phase !== 'done') {
      try {
        this.reader.flush();
      } catch {
        // An unterminated trailing event is dropped by design; nothing else can fail here.
      }
    }
    if (this.phase === 'open') {
      this.fail(
        'upstream_error',
        this.started
          ? 'upstream chat stream ended without a finish_reason'
          : 'upstream chat stream ended without sending any chunk',
      );
    }
    this.phase = 'done';
  }

  private onSseEvent(event: SseEvent): void {
    if (this.phase === 'done') return;
    const data = event.data;
    const parsed = parseChunkData(data);
    if (parsed.kind === 'done') {
      if (this.phase === 'open')
        this.fail('upstream_error', 'upstream chat stream sent [DONE] without a finish_reason');
      this.phase = 'done';
      return;
    }
    if (parsed.kind === 'malformed') {
      if (this.phase === 'open') {
        const excerpt = data.length > EXCERPT_CHARS ? `${data.slice(0, EXCERPT_CHARS)}…` : data;
        this.fail('upstream_error', `upstream sent a malformed chat chunk: ${JSON.stringify(excerpt)}`);
      }
      return;
    }
    const read = classifyChunk(parsed.value, event.event);
    if (read.kind === 'not-object') {
      if (this.phase === 'open')
        this.fail(
          'upstream_error',
          `upstream sent a chat chunk that is not an object: ${data.slice(0, EXCERPT_CHARS)}`,
        );
      return;
    }
    if (read.kind === 'error') {
      this.onUpstreamError(read.error);
      return;
    }
    this.onChunk(read.chunk as ChatCompletionChunk);
  }

  private onChunk(chunk: ChatCompletionChunk): void {
    if (chunk.usage !== undefined && chunk.usage !== null) {
      const usage = chatUsageOf(chunk.usage);
      if (usage !== undefined) {
        if (this.phase === 'terminal') this.onEvent({ type: 'usage', usage });
        else this.heldUsage = usage;
      }
    }
    if (this.phase !== 'open') return;
    if (!this.started) {
      this.started = true;
      this.onEvent({
        type: 'response-start',
        id: typeof chunk.id === 'string' ? chunk.id : newId('chatcmpl-'),
        model: typeof chunk.model === 'string' ? chunk.model : '',
        created: typeof chunk.created === 'number' ? chunk.created : Math.floor(Date.now() / 1000),
        ...(this.heldUsage?.inputTokens === undefined ? {} : { promptUsage: this.heldUsage }),
      });
    }
    const choices = chunk.choices;
    if (!Array.isArray(choices)) return;
    for (const choice of choices) {
      // iop asks for one choice (n>1 is rejected); anything but choice 0 is not ours.
      if (typeof choice !== 'object' || choice === null || (choice.index !== undefined && choice.index !== 0)) continue;
      this.onChoice(choice);
    }
  }

  private onChoice(choice: ChatChunkChoice): void {
    const delta = choice.delta;
    if (typeof delta === 'object' && delta !== null) {
      const reasoning = delta.reasoning ?? delta.reasoning_content;
      if (typeof reasoning === 'string' && reasoning.length > 0)
        this.onEvent({ type: 'reasoning-delta', text: reasoning });
      if (typeof delta.content === 'string' && delta.content.length > 0)
        this.onEvent({ type: 'text-delta', text: delta.content });
      if (Array.isArray(delta.tool_calls)) {
        for (let position = 0; position < delta.tool_calls.length; position++) {
          const fragment = delta.tool_calls[position];
          if (typeof fragment === 'object' && fragment !== null) this.toolCalls.push(fragment, position);
        }
      }
    }
    const raw = choice.finish_reason;
    if (typeof raw === 'string' && raw.length > 0) {
      this.toolCalls.flush();
      this.phase = 'terminal';
      const stopSequence = typeof choice.stop_reason === 'string' ? choice.stop_reason : choice.matched_stop;
      this.onEvent(
        typeof stopSequence === 'string'
          ? { type: 'finish', reason: fromChatFinishReason(raw), raw, stopSequence }
          : { type: 'finish', reason: fromChatFinishReason(raw), raw },
      );
      this.flushUsage();
    }
  }

  private onUpstreamError(error: ErrorEvent): void {
    if (this.phase !== 'open') return;
    this.phase = 'terminal';
    this.onEvent(error);
    this.flushUsage();
  }

  private fail(code: 'upstream_error', message: string): void {
    if (this.phase !== 'open') return;
    this.phase = 'terminal';
    this.onEvent({ type: 'error', code, message });
    this.flushUsage();
  }

  private flushUsage(): void {
    if (this.heldUsage === undefined) return;
    const usage = this.heldUsage;
    this.heldUsage = undefined;
    this.onEvent({ type: 'usage', usage });
  }
}

/**
 * Creates a decoder for one upstream Chat Completions SSE body. Events are delivered in order to
 * `onEvent`, synchronously from `push`/`end`.
 */
export function createChatStreamDecoder(onEvent: (event: StreamEvent) => void): UpstreamDecoder {
  return new ChatStreamDecoder(onEvent);
}
