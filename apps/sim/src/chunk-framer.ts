/**
 * Serialized SSE frames of one chat completion stream (docs/protocols.md "Chat stream", "Backend extras").
 *
 * The envelope (`id`, `object`, `created`, `model`, choice index) is the same in every chunk, so
 * it is serialized once per request; each token costs one `JSON.stringify` of its text and one
 * string concatenation.
 */
import type { FinishReason, Piece } from './output-plan.js';

/** How chunks carry `usage`: absent, `null` except on the trailing usage chunk, or on every chunk. */
export type StreamUsageMode = 'absent' | 'null' | 'continuous';

export const DONE_FRAME = 'data: [DONE]\n\n';

export class ChunkFramer {
  private readonly head: string;
  private readonly choiceTail: string;
  private readonly closeNull: string;

  /**
   * @param promptTokens prompt tokens, for usage objects.
   * @param cachedTokens the part of them reported as cached (`prompt_tokens_details.cached_tokens`); 0 omits the field.
   */
  constructor(
    id: string,
    created: number,
    model: string,
    private readonly usageMode: StreamUsageMode,
    private readonly promptTokens: number,
    private readonly cachedTokens = 0,
  ) {
    this.head = `data: {"id":"${id}","object":"chat.completion.chunk","created":${created},"model":${JSON.stringify(model)},"choices":[{"index":0,"delta":`;
    this.choiceTail = ',"logprobs":null,"finish_reason":null}]';
    this.closeNull = usageMode === 'null' ? ',"usage":null}\n\n' : '}\n\n';
  }

  private usageJson(completionTokens: number): string {
    const details = this.cachedTokens > 0 ? `,"prompt_tokens_details":{"cached_tokens":${this.cachedTokens}}` : '';
    return `{"prompt_tokens":${this.promptTokens},"total_tokens":${this.promptTokens + completionTokens},"completion_tokens":${completionTokens}${details}}`;
  }

  private close(completionTokens: number): string {
    return this.usageMode === 'continuous' ? `,"usage":${this.usageJson(completionTokens)}}\n\n` : this.closeNull;
  }

  /** First chunk: `delta:{role:"assistant",content:""}` (vLLM sends exactly this once). */
  role(): string {
    return `${this.head}{"role":"assistant","content":""}${this.choiceTail}${this.close(0)}`;
  }

  /** The chunk of one planned token; `completionTokens` counts it. */
  piece(piece: Piece, completionTokens: number): string {
    let delta: string;
    switch (piece.kind) {
      case 'content':
        delta = `{"content":${JSON.stringify(piece.text)}}`;
        break;
      case 'reasoning': {
        const text = JSON.stringify(piece.text);
        delta = `{"reasoning":${text},"reasoning_content":${text}}`;
        break;
      }
      case 'tool-call-start':
        delta = `{"tool_calls":[{"index":${piece.index},"id":"${piece.id}","type":"function","function":{"name":${JSON.stringify(piece.name)},"arguments":""}}]}`;
        break;
      case 'tool-call-arguments':
        delta = `{"tool_calls":[{"index":${piece.index},"function":{"arguments":${JSON.stringify(piece.text)}}}]}`;
        break;
    }
    return `${this.head}${delta}${this.choiceTail}${this.close(completionTokens)}`;
  }

  /** Last choice chunk: `delta:{}` with `finish_reason` and vLLM's `stop_reason`. */
  finish(finishReason: FinishReason, stopReason: string | null, completionTokens: number): string {
    return `${this.head}{},"logprobs":null,"finish_reason":"${finishReason}","stop_reason":${JSON.stringify(stopReason)}}]${this.close(completionTokens)}`;
  }

  /** Trailing usage chunk: `choices:[]` (include_usage). */
  usage(completionTokens: number): string {
    const start = this.head.slice(0, this.head.indexOf('"choices":'));
    return `${start}"choices":[],"usage":${this.usageJson(completionTokens)}}\n\n`;
  }

  /** A chunk whose JSON is cut short (fault=malformed). */
  malformed(): string {
    return `${this.head}{"content":"trunc\n\n`;
  }
}

/** vLLM's in-stream error event: `data: {"error":{...,"code":500}}` (docs/protocols.md "Backend extras"). */
export function errorFrame(message: string): string {
  return `data: ${JSON.stringify({ error: { message, type: 'InternalServerError', param: null, code: 500 } })}\n\n`;
}
