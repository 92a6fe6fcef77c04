/**
 * Normalized events → the client's Chat Completions SSE (docs/protocols.md "Chat stream", "Chat errors"), in the order
 * the openai-node `ChatCompletionStream` accumulator checks:
 * 1. `delta:{role:"assistant", content:""}` (once, on `response-start` or the first output event);
 * 2. `delta:{content}` / `delta:{reasoning_content}` (field name configurable, vLLM convention);
 * 3. a tool call's first chunk `{index, id, type:"function", function:{name, arguments:""}}`, then `{index,
 *    function:{arguments}}` fragments; client indexes are 0, 1, … in order of appearance;
 * 4. `delta:{}` + `finish_reason`;
 * 5. from `end()`: the usage chunk (`choices: []`) only when the client asked `include_usage` and usage is known, then
 *    `[DONE]`. An `error` event renders `data: {"error":{message,type,param,code}}` and ends the stream (no `[DONE]`:
 *    the SDK throws on the error). `end()` without a terminal event renders such an error.
 *
 * Per chunk, only the choice is serialized: id/object/created/model are a prebuilt prefix.
 */
import {
  newId,
  sseFrame,
  sseJson,
  SSE_DONE,
  type EncodeContext,
  type ErrorCode,
  type StreamEncoder,
  type StreamEvent,
  type Usage,
} from '@iop/core';
import { toOpenAIErrorBody } from './errors.js';
import { toChatFinishReason } from './finish-reason.js';
import { toChatUsage } from './usage.js';

export interface ChatStreamEncoderOptions {
  /**
   * Delta field for reasoning text: `reasoning_content` (default; vLLM/DeepSeek convention read by
   * most OpenAI-compatible clients), `reasoning` (current vLLM), or `none` to drop reasoning.
   */
  reasoningField?: 'reasoning_content' | 'reasoning' | 'none';
}

type Phase = 'idle' | 'open' | 'finished' | 'closed';

class ChatStreamEncoder implements StreamEncoder {
  private readonly prefix: string;
  private readonly usagePrefix: string;
  private readonly includeUsage: boolean;
  private readonly reasoningField: 'reasoning_content' | 'reasoning' | 'none';
  private readonly toolIndexes = new Map<number, number>();
  private phase: Phase = 'idle';
  private usage: Usage | undefined;

  constructor(context: EncodeContext, options: ChatStreamEncoderOptions) {
    const head = `{"id":${JSON.stringify(newId('chatcmpl-'))},"object":"chat.completion.chunk","created":${context.createdAt},"model":${JSON.stringify(context.model)}`;
    this.includeUsage = context.request.includeUsage === true;
    // With include_usage on, every chunk but the usage chunk carries `usage: null` (docs/protocols.md "Chat stream").
    this.prefix = `${head},${this.includeUsage ? '"usage":null,' : ''}"choices":[{"index":0,"delta":`;
    this.usagePrefix = `${head},"choices":[],"usage":`;
    this.reasoningField = options.reasoningField ?? 'reasoning_content';
  }

  push(event: StreamEvent): string {
    if (this.phase === 'finished' || this.phase === 'closed') {
      if (event.type === 'usage') this.usage = event.usage;
      return '';
    }
    switch (event.type) {
      case 'response-start':
        return this.start();
      case 'text-delta':
        return event.text.length === 0
          ? this.start()
          : this.start() + this.chunk(`{"content":${JSON.stringify(event.text)}}`);
      case 'reasoning-delta':
        if (this.reasoningField === 'none' || event.text.length === 0) return this.start();
        return this.start() + this.chunk(`{"${this.reasoningField}":${JSON.stringify(event.text)}}`);
      case 'tool-call-delta':
        return this.start() + this.toolCall(event.index, event.id, event.name, event.argumentsDelta);
      case 'usage':
        this.usage = event.usage;
        return '';
      case 'finish': {
        const out = this.start() + this.chunk('{}', JSON.stringify(toChatFinishReason(event.reason, event.raw)));
        this.phase = 'finished';
        return out;
      }
      case 'error':
        return this.error(event.code, event.message, event.param);
    }
  }

  end(): string {
    switch (this.phase) {
      case 'closed':
        return '';
      case 'finished': {
        this.phase = 'closed';
        const usage =
          this.includeUsage && this.usage !== undefined
            ? sseFrame(`${this.usagePrefix}${JSON.stringify(toChatUsage(this.usage))}}`)
            : '';
        return usage + SSE_DONE;
      }
      default:
        return this.error('upstream_error', 'the stream ended before the model finished');
    }
  }

  /** Chat completions are not stored: no result. */
  result(): undefined {
    return undefined;
  }

  private start(): string {
    if (this.phase !== 'idle') return '';
    this.phase = 'open';
    return this.chunk('{"role":"assistant","content":""}');
  }

  /** One chunk: the prebuilt prefix, the delta JSON, the finish reason (JSON, default null). */
  private chunk(delta: string, finishReason = 'null'): string {
    return sseFrame(`${this.prefix}${delta},"logprobs":null,"finish_reason":${finishReason}}]}`);
  }

  private toolCall(hubIndex: number, id: string | undefined, name: string | undefined, argumentsDelta: string): string {
    let index = this.toolIndexes.get(hubIndex);
    if (index === undefined) {
      index = this.toolIndexes.size;
      this.toolIndexes.set(hubIndex, index);
      const first = `{"tool_calls":[{"index":${index},"id":${JSON.stringify(id ?? newId('call_'))},"type":"function","function":{"name":${JSON.stringify(name ?? '')},"arguments":""}}]}`;
      return this.chunk(first) + (argumentsDelta.length > 0 ? this.arguments(index, argumentsDelta) : '');
    }
    return argumentsDelta.length > 0 ? this.arguments(index, argumentsDelta) : '';
  }

  private arguments(index: number, argumentsDelta: string): string {
    return this.chunk(`{"tool_calls":[{"index":${index},"function":{"arguments":${JSON.stringify(argumentsDelta)}}}]}`);
  }

  private error(code: ErrorCode, message: string, param?: string): string {
    this.phase = 'closed';
    return sseJson(toOpenAIErrorBody({ code, message, param }));
  }
}

/** A Chat Completions stream encoder for one response. */
export function createChatStreamEncoder(context: EncodeContext, options: ChatStreamEncoderOptions = {}): StreamEncoder {
  return new ChatStreamEncoder(context, options);
}
