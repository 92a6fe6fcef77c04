/**
 * Request bodies and stream token extraction for the three client dialects the load generator
 * speaks. A "token" on a stream is one content delta event (what a user sees arrive).
 */
export type BenchDialect = 'chat' | 'responses' | 'messages';

export interface DialectSpec {
  path: string;
  body(model: string, prompt: string, maxTokens: number, stream: boolean): Record<string, unknown>;
  /** Whether an SSE event (name, parsed data) carries generated text. */
  isToken(event: string | undefined, data: Record<string, unknown>): boolean;
  /** Output tokens reported by a non-stream body or a final stream event, when present. */
  outputTokens(data: Record<string, unknown>): number | undefined;
  /**
   * Adds the tool calls a non-stream body or a stream event carries to `calls` (by index; stream
   * fragments are appended). Defined for the dialects the benchmarks check tool calls on.
   */
  collectToolCalls?(data: Record<string, unknown>, calls: ToolCallResult[]): void;
}

/** A tool call as the client received it: name and arguments JSON text. */
export interface ToolCallResult {
  name: string;
  arguments: string;
}

interface ChatToolCallWire {
  index?: number;
  function?: { name?: string; arguments?: string };
}

type Json = Record<string, unknown>;

export const DIALECTS: Record<BenchDialect, DialectSpec> = {
  chat: {
    path: '/v1/chat/completions',
    body: (model, prompt, maxTokens, stream) => ({
      model,
      messages: [{ role: 'user', content: prompt }],
      max_tokens: maxTokens,
      stream,
      ...(stream ? { stream_options: { include_usage: true } } : {}),
    }),
    isToken: (_event, data) => {
      const choices = data.choices as Array<{ delta?: { content?: string | null } }> | undefined;
      const content = choices?.[0]?.delta?.content;
      return typeof content === 'string' && content.length > 0;
    },
    outputTokens: (data) => (data.usage as Json | null | undefined)?.completion_tokens as number | undefined,
    collectToolCalls: (data, calls) => {
      const choice = (
        data.choices as
          | Array<{ delta?: { tool_calls?: ChatToolCallWire[] }; message?: { tool_calls?: ChatToolCallWire[] } }>
          | undefined
      )?.[0];
      const stream = choice?.delta?.tool_calls;
      for (const [position, wire] of (stream ?? choice?.message?.tool_calls ?? []).entries()) {
        const call = (calls[stream === undefined ? position : (wire.index ?? 0)] ??= { name: '', arguments: '' });
        call.name += wire.function?.name ?? '';
        call.arguments += wire.function?.arguments ?? '';
      }
    },
  },
  responses: {
    path: '/v1/responses',
    body: (model, prompt, maxTokens, stream) => ({
      model,
      input: prompt,
      max_output_tokens: maxTokens,
      stream,
      store: false,
    }),
    isToken: (event) => event === 'response.output_text.delta',
    outputTokens: (data) => {
      const response = (data.response as Json | undefined) ?? data;
      return (response.usage as Json | undefined)?.output_tokens as number | undefined;
    },
  },
  messages: {
    path: '/v1/messages',
    body: (model, prompt, maxTokens, stream) => ({
      model,
      messages: [{ role: 'user', content: prompt }],
      max_tokens: maxTokens,
      stream,
    }),
    isToken: (event) => event === 'content_block_delta',
    outputTokens: (data) => (data.usage as Json | undefined)?.output_tokens as number | undefined,
  },
};
