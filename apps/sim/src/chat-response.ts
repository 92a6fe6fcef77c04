/**
 * The non-stream `chat.completion` body (docs/protocols.md "Chat response") rendered from an output plan, with vLLM's
 * extra fields (docs/protocols.md "Backend extras"): `reasoning` and `reasoning_content` on the message, `stop_reason`
 * on the choice, `tool_calls: []` when there are none.
 */
import type { OutputPlan } from './output-plan.js';

interface ToolCallJson {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export interface ChatCompletionJson {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: {
    index: 0;
    message: {
      role: 'assistant';
      content: string | null;
      refusal: null;
      tool_calls: ToolCallJson[];
      reasoning: string | null;
      reasoning_content: string | null;
    };
    logprobs: null;
    finish_reason: string;
    stop_reason: string | null;
  }[];
  usage: {
    prompt_tokens: number;
    total_tokens: number;
    completion_tokens: number;
    prompt_tokens_details?: { cached_tokens: number };
  };
}

/** Joins the plan's pieces into one message; `promptTokens` goes into usage. */
export function renderChatCompletion(
  id: string,
  created: number,
  model: string,
  plan: OutputPlan,
  promptTokens: number,
  cachedTokens = 0,
): ChatCompletionJson {
  let content: string | null = null;
  let reasoning: string | null = null;
  const toolCalls: ToolCallJson[] = [];
  for (const piece of plan.pieces) {
    switch (piece.kind) {
      case 'content':
        content = content === null ? piece.text : content + piece.text;
        break;
      case 'reasoning':
        reasoning = reasoning === null ? piece.text : reasoning + piece.text;
        break;
      case 'tool-call-start':
        toolCalls[piece.index] = { id: piece.id, type: 'function', function: { name: piece.name, arguments: '' } };
        break;
      case 'tool-call-arguments':
        toolCalls[piece.index]!.function.arguments += piece.text;
        break;
    }
  }
  const completionTokens = plan.pieces.length;
  return {
    id,
    object: 'chat.completion',
    created,
    model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: content ?? (toolCalls.length > 0 ? null : ''),
          refusal: null,
          tool_calls: toolCalls,
          reasoning,
          reasoning_content: reasoning,
        },
        logprobs: null,
        finish_reason: plan.finishReason,
        stop_reason: plan.stopReason,
      },
    ],
    usage: {
      prompt_tokens: promptTokens,
      total_tokens: promptTokens + completionTokens,
      completion_tokens: completionTokens,
      ...(cachedTokens > 0 ? { prompt_tokens_details: { cached_tokens: cachedTokens } } : {}),
    },
  };
}
