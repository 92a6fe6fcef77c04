/**
 * OpenAI Chat Completions wire shapes (docs/protocols.md "Chat Completions"; openai-node `chat/completions.ts`), plus
 * the extras OpenAI-compatible servers add (vLLM `reasoning`/`reasoning_content`, `stop_reason`; docs/protocols.md
 * "Backend extras"). Only the fields iop reads or writes are typed; everything is optional on the read side because
 * upstreams differ.
 */

/** `usage` of a response or of the trailing stream chunk (token counts). */
export interface ChatUsage {
  prompt_tokens?: number;
  completion_tokens?: number;
  total_tokens?: number;
  prompt_tokens_details?: { cached_tokens?: number; cache_write_tokens?: number } | null;
  completion_tokens_details?: { reasoning_tokens?: number } | null;
}

/** One tool-call fragment in a stream delta (`ChoiceDelta.ToolCall`). */
export interface ChatToolCallDelta {
  index?: number;
  id?: string | null;
  type?: 'function';
  /** `arguments` is a JSON-encoded string; some servers (llama.cpp server, Ollama) send the object itself. */
  function?: { name?: string | null; arguments?: string | Record<string, unknown> | null } | null;
}

/** `choices[].delta` of a chunk. */
export interface ChatDelta {
  role?: string | null;
  content?: string | null;
  /** vLLM (current) reasoning text. */
  reasoning?: string | null;
  /** vLLM (older) / DeepSeek reasoning text. */
  reasoning_content?: string | null;
  refusal?: string | null;
  tool_calls?: ChatToolCallDelta[] | null;
}

export interface ChatChunkChoice {
  index?: number;
  delta?: ChatDelta | null;
  finish_reason?: string | null;
  /** vLLM: the matched stop string (or stop token id, an int). */
  stop_reason?: string | number | null;
  /** SGLang: the matched stop string (or stop token id, an int). */
  matched_stop?: string | number | null;
}

/** `chat.completion.chunk` (docs/protocols.md "Chat stream"). */
export interface ChatCompletionChunk {
  id?: string;
  object?: string;
  created?: number;
  model?: string;
  choices?: ChatChunkChoice[] | null;
  usage?: ChatUsage | null;
}

/** Tool call on an assistant message: `arguments` is a JSON-encoded string. */
export interface ChatToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** `choices[].message` of a non-stream response. */
export interface ChatResponseMessage {
  role?: string;
  content?: string | null;
  reasoning?: string | null;
  reasoning_content?: string | null;
  refusal?: string | null;
  tool_calls?: ChatToolCall[] | null;
}

/** `chat.completion` (docs/protocols.md "Chat response"). */
export interface ChatCompletion {
  id?: string;
  object?: string;
  created?: number;
  model?: string;
  choices?: Array<{
    index?: number;
    message?: ChatResponseMessage | null;
    finish_reason?: string | null;
    stop_reason?: string | number | null;
    matched_stop?: string | number | null;
  }> | null;
  usage?: ChatUsage | null;
}

/** The OpenAI error object (`Shared.ErrorObject`); vLLM sends `code` as the integer status. */
export interface ChatErrorObject {
  message?: string;
  type?: string;
  param?: string | null;
  code?: string | number | null;
}

/** Request-side content part (docs/protocols.md "Chat request"). */
export type ChatContentPart =
  | { type: 'text'; text: string }
  | { type: 'image_url'; image_url: { url: string; detail?: 'auto' | 'low' | 'high' } }
  | { type: 'file'; file: { file_data?: string; file_id?: string; filename?: string } };

/** A request message as iop sends it to a backend. */
export type ChatRequestMessage =
  | { role: 'system' | 'developer'; content: string }
  | { role: 'user'; content: string | ChatContentPart[] }
  | { role: 'assistant'; content: string | null; tool_calls?: ChatToolCall[] }
  | { role: 'tool'; tool_call_id: string; content: string };

/** A function tool as sent in `tools` (docs/protocols.md "Chat request"). */
export interface ChatFunctionTool {
  type: 'function';
  function: { name: string; description?: string; parameters?: Record<string, unknown>; strict?: boolean };
}
