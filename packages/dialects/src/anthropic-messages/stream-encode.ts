/**
 * Normalized stream events → Anthropic Messages SSE (docs/protocols.md "Messages stream" and "Responses input and Chat
 * messages", Chat chunks → Anthropic events). Every event is framed with an `event:` line (the TS SDK drops frames
 * without one).
 *
 * Grammar emitted: message_start, ping, ( content_block_start, content_block_delta*, content_block_stop )* indexes 0,
 * 1, 2… never interleaved message_delta {stop_reason, stop_sequence, usage}, message_stop or, on failure at any point,
 * one `event: error` and nothing after it.
 *
 * - Reasoning becomes `thinking` blocks only when the request enabled `thinking` (`enabled` or `adaptive`); otherwise
 *   it is dropped: a client never gets a block it did not ask for. With `thinking.display: "omitted"` a thinking block
 *   carries no `thinking_delta`: its text stays empty and it still ends with its signature (Anthropic's "omitted"
 *   display).
 * - `message_start.usage.input_tokens` is the backend's prompt count from its first chunk
 *   (`response-start.promptUsage`: vLLM and SGLang send it there when asked for `continuous_usage_stats`), net of
 *   cache; when the backend gave none at the start, the edge's estimate (`EncodeContext.estimateInputTokens`),
 *   corrected by `message_delta`'s final count.
 * - Every switch between reasoning, text and tool calls opens a new block. A thinking block ends with a
 *   `signature_delta` (the upstream's signature, or `UNSIGNED_THINKING_SIGNATURE`).
 * - Tool arguments go out as `input_json_delta` fragments exactly as they arrive. A call with no arguments streams no
 *   delta, so the SDK's `input` stays `{}`.
 * - Tool calls arriving while another tool_use block is open are buffered and released, in order, when it closes (the
 *   upstream may interleave parallel calls).
 * - `message_delta` waits for the usage that follows `finish`: it is sent on the first `usage` after `finish`, or by
 *   `end()`. Its usage is cumulative with `input_tokens` net of cache (docs/protocols.md "Usage").
 * - `end()` without a terminal event renders an `api_error` error event, never a made-up stop.
 */
import type {
  EncodeContext,
  FinishEvent,
  ReasoningDeltaEvent,
  StreamEncoder,
  StreamEvent,
  ToolCallDeltaEvent,
  Usage,
} from '@iop/core';
import { newId, sseJson } from '@iop/core';
import { ContentBlockTracker } from './content-block-tracker.js';
import { errorEventFrame } from './errors.js';
import { toAnthropicStop } from './finish-reason.js';
import { ToolCallBuffer } from './tool-call-buffer.js';
import { startUsage, toMessageDeltaUsage } from './usage.js';
import type { AnthropicMessage, ContentBlockDelta, ContentBlockStart } from './wire-types.js';

/**
 * Signature of thinking blocks whose upstream gave none (chat backends never do). Opaque to
 * clients; iop drops thinking blocks from history before they reach a backend (docs/protocols.md "Reasoning").
 */
export const UNSIGNED_THINKING_SIGNATURE = 'iop-unsigned';

const PING = sseJson({ type: 'ping' }, 'ping');
const MESSAGE_STOP = sseJson({ type: 'message_stop' }, 'message_stop');

type Phase = 'idle' | 'streaming' | 'finished' | 'done';

export class AnthropicStreamEncoder implements StreamEncoder {
  private phase: Phase = 'idle';
  private readonly blocks = new ContentBlockTracker();
  private readonly bufferedTools = new ToolCallBuffer();
  private usage: Usage | undefined;
  private finish: FinishEvent | undefined;

  constructor(private readonly context: EncodeContext) {}

  push(event: StreamEvent): string {
    if (this.phase === 'done') return '';
    switch (event.type) {
      case 'response-start':
        return this.start(event.promptUsage);
      case 'text-delta':
        if (event.text.length === 0 || this.phase === 'finished') return '';
        return this.start() + this.switchTo('text') + this.delta({ type: 'text_delta', text: event.text });
      case 'reasoning-delta':
        // Thinking blocks only for a request that enabled thinking: otherwise reasoning stays out of the answer.
        return this.context.request.reasoning?.enabled === true ? this.onReasoning(event) : '';
      case 'tool-call-delta':
        return this.onToolCall(event);
      case 'usage':
        this.usage = event.usage;
        return this.phase === 'finished' ? this.messageEnd() : '';
      case 'finish':
        if (this.phase === 'finished') return '';
        {
          const out = this.start() + this.closeBlock();
          this.finish = event;
          this.phase = 'finished';
          return out;
        }
      case 'error':
        this.phase = 'done';
        return errorEventFrame(event);
    }
  }

  end(): string {
    if (this.phase === 'done') return '';
    if (this.phase === 'finished') return this.messageEnd();
    this.phase = 'done';
    return errorEventFrame({
      code: 'upstream_error',
      message: 'the model stream ended before the response was complete',
    });
  }

  /** Messages are not stored: no result. */
  result(): undefined {
    return undefined;
  }

  private start(promptUsage?: Usage): string {
    if (this.phase !== 'idle') return '';
    this.phase = 'streaming';
    const message: AnthropicMessage = {
      id: newId('msg_'),
      type: 'message',
      role: 'assistant',
      model: this.context.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: startUsage(promptUsage, this.context.estimateInputTokens),
    };
    return sseJson({ type: 'message_start', message }, 'message_start') + PING;
  }

  private onReasoning(event: ReasoningDeltaEvent): string {
    if (this.phase === 'finished') return '';
    const current = this.blocks.current;
    if (event.text.length === 0) {
      if (current?.kind === 'thinking' && event.signature) current.signature = event.signature;
      return '';
    }
    const omitted = this.context.request.reasoning?.display === 'omitted';
    const out =
      this.start() +
      this.switchTo('thinking') +
      (omitted ? '' : this.delta({ type: 'thinking_delta', thinking: event.text }));
    const block = this.blocks.current;
    if (block?.kind === 'thinking' && event.signature) block.signature = event.signature;
    return out;
  }

  private onToolCall(event: ToolCallDeltaEvent): string {
    if (this.phase === 'finished') return '';
    const current = this.blocks.current;
    if (current?.kind === 'tool_use' && current.toolIndex === event.index) {
      return event.argumentsDelta.length > 0
        ? this.delta({ type: 'input_json_delta', partial_json: event.argumentsDelta })
        : '';
    }
    if (this.bufferedTools.isClosed(event.index)) {
      this.phase = 'done';
      return errorEventFrame({
        code: 'upstream_error',
        message: `the model continued tool call ${event.index} after it had ended`,
      });
    }
    if (current?.kind === 'tool_use') {
      this.bufferedTools.add(event.index, event.id, event.name, event.argumentsDelta);
      return '';
    }
    return this.start() + this.closeBlock() + this.openToolUse(event.index, event.id, event.name, event.argumentsDelta);
  }

  /** Closes the open block unless it already has `kind`, then opens a block of `kind`. */
  private switchTo(kind: 'thinking' | 'text'): string {
    if (this.blocks.current?.kind === kind) return '';
    const out = this.closeBlock();
    const index = kind === 'text' ? this.blocks.openText() : this.blocks.openThinking();
    const block: ContentBlockStart =
      kind === 'text' ? { type: 'text', text: '' } : { type: 'thinking', thinking: '', signature: '' };
    return out + sseJson({ type: 'content_block_start', index, content_block: block }, 'content_block_start');
  }

  private openToolUse(
    toolIndex: number,
    id: string | undefined,
    name: string | undefined,
    argumentsDelta: string,
  ): string {
    const index = this.blocks.openToolUse(toolIndex);
    const block: ContentBlockStart = { type: 'tool_use', id: id ?? newId('toolu_'), name: name ?? '', input: {} };
    let out = sseJson({ type: 'content_block_start', index, content_block: block }, 'content_block_start');
    if (argumentsDelta.length > 0) out += this.delta({ type: 'input_json_delta', partial_json: argumentsDelta });
    return out;
  }

  /** Stops the open block (a thinking block gets its signature first), then releases buffered tool calls. */
  private closeBlock(): string {
    const block = this.blocks.close();
    if (block === undefined) return '';
    let out = '';
    if (block.kind === 'thinking') {
      out += this.deltaAt(block.index, {
        type: 'signature_delta',
        signature: block.signature ?? UNSIGNED_THINKING_SIGNATURE,
      });
    }
    out += sseJson({ type: 'content_block_stop', index: block.index }, 'content_block_stop');
    if (block.kind === 'tool_use') {
      this.bufferedTools.markClosed(block.toolIndex);
      for (const call of this.bufferedTools.drain()) {
        out += this.openToolUse(call.toolIndex, call.id, call.name, call.arguments) + this.closeBlock();
      }
    }
    return out;
  }

  private delta(delta: ContentBlockDelta): string {
    const current = this.blocks.current;
    if (current === undefined) throw new Error('content_block_delta with no open block');
    return this.deltaAt(current.index, delta);
  }

  private deltaAt(index: number, delta: ContentBlockDelta): string {
    return sseJson({ type: 'content_block_delta', index, delta }, 'content_block_delta');
  }

  /** `message_delta` (stop reason, cumulative usage) and `message_stop`. */
  private messageEnd(): string {
    this.phase = 'done';
    const finish = this.finish;
    if (finish === undefined) throw new Error('message end before finish');
    const stop = toAnthropicStop(finish, this.blocks.toolUseCount > 0);
    const messageDelta = { type: 'message_delta', delta: stop, usage: toMessageDeltaUsage(this.usage) };
    return sseJson(messageDelta, 'message_delta') + MESSAGE_STOP;
  }
}

/** Creates the per-response encoder (Dialect.createStreamEncoder). */
export function createStreamEncoder(context: EncodeContext): StreamEncoder {
  return new AnthropicStreamEncoder(context);
}
