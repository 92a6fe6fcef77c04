/**
 * The internal request model (the hub). Every client dialect decodes its request into an
 * `InferenceRequest`; the backend encoder renders it as an OpenAI Chat Completions body, which
 * vLLM, SGLang, llama.cpp server, Ollama and the embedded backend all serve (docs/protocols.md "Translation").
 *
 * A conversation is a list of turns with typed parts. Tool-call arguments stay JSON strings (the
 * model's exact output); dialects that need an object (Anthropic `input`) parse at their edge.
 */

export interface TextPart {
  type: 'text';
  text: string;
}

/** An image by URL: `https:` or a `data:<mime>;base64,…` URI (docs/protocols.md "Images and files"). */
export interface ImagePart {
  type: 'image';
  url: string;
  detail?: 'auto' | 'low' | 'high';
}

/** A file (e.g. a PDF) inline as base64. */
export interface FilePart {
  type: 'file';
  data: string;
  mediaType: string;
  filename?: string;
}

export type ContentPart = TextPart | ImagePart | FilePart;

/** Reasoning the model produced earlier, replayed in history. Backends that cannot take it drop it. */
export interface ReasoningPart {
  type: 'reasoning';
  text: string;
  /** Opaque provider signature / encrypted content; never shown as text. */
  signature?: string;
  /** True for Anthropic `redacted_thinking`: no readable text. */
  redacted?: boolean;
}

export interface ToolCallPart {
  type: 'tool-call';
  /** Call id exactly as the client knows it (Chat `id`, Responses `call_id`, Anthropic `tool_use.id`). */
  id: string;
  name: string;
  /** JSON-encoded arguments, "" meaning none. */
  arguments: string;
  /**
   * How the client's dialect calls this tool when it is not a plain function: a Responses
   * `custom` tool (one string argument `input`), or a member of a Responses `namespace`.
   */
  origin?: ToolOrigin;
}

export type AssistantPart = TextPart | ReasoningPart | ToolCallPart;

export interface SystemMessage {
  role: 'system' | 'developer';
  content: TextPart[];
}

export interface UserMessage {
  role: 'user';
  content: ContentPart[];
}

export interface AssistantMessage {
  role: 'assistant';
  /** In the order produced: reasoning, text and tool calls. */
  content: AssistantPart[];
}

/** The result of one tool call. */
export interface ToolMessage {
  role: 'tool';
  toolCallId: string;
  content: ContentPart[];
  /** Anthropic `is_error`; Chat and Responses have no such flag (docs/protocols.md "Tool results"). */
  isError?: boolean;
}

export type Message = SystemMessage | UserMessage | AssistantMessage | ToolMessage;

/** Where a client tool came from, so calls can be mapped back to the client's form. */
export type ToolOrigin =
  | { kind: 'function' }
  | { kind: 'custom'; namespace?: string; name?: string } // Responses freeform tool: a function with one string argument `input` (namespace/name when it is a namespace member)
  | { kind: 'namespace'; namespace: string; name: string }; // Responses namespace member

export interface ToolDefinition {
  /** Name as the backend sees it (unique in the request). */
  name: string;
  description?: string;
  /** JSON Schema of the arguments object. */
  parameters: Record<string, unknown>;
  strict?: boolean;
  origin?: ToolOrigin;
  /**
   * Anthropic tool search (`defer_loading: true`, beta `advanced-tool-use-2025-11-20`): offered to
   * the model only once a `tool_reference` block in a tool result names it.
   */
  deferLoading?: boolean;
}

export type ToolChoice = { type: 'auto' } | { type: 'none' } | { type: 'required' } | { type: 'tool'; name: string };

export type ResponseFormat =
  | { type: 'text' }
  | { type: 'json_object' }
  | { type: 'json_schema'; name: string; schema: Record<string, unknown>; strict?: boolean; description?: string };

/** Reasoning switch: `enabled: false` turns a thinking model's reasoning off. */
export interface ReasoningConfig {
  enabled: boolean;
  /**
   * Anthropic `thinking.display`: `omitted` sends thinking blocks without their text (an empty
   * `thinking` and the signature); `summarized` (Anthropic's default) or absent sends the text.
   */
  display?: 'summarized' | 'omitted';
  /** OpenAI effort bucket (`minimal`…`max`). */
  effort?: string;
  /** Anthropic `budget_tokens`. */
  budgetTokens?: number;
}

export interface InferenceRequest {
  /** The model name the client asked for. */
  model: string;
  messages: Message[];
  tools?: ToolDefinition[];
  toolChoice?: ToolChoice;
  parallelToolCalls?: boolean;
  /**
   * Output token limit (Chat `max_completion_tokens`/`max_tokens`, Responses `max_output_tokens`, Anthropic
   * `max_tokens`).
   */
  maxOutputTokens?: number;
  temperature?: number;
  topP?: number;
  topK?: number;
  seed?: number;
  stop?: string[];
  responseFormat?: ResponseFormat;
  reasoning?: ReasoningConfig;
  /** End-user id (Chat `user`, Anthropic `metadata.user_id`). */
  user?: string;
  /** Key for prefix-affinity routing (Responses `prompt_cache_key`). */
  promptCacheKey?: string;
  stream: boolean;
  /** Whether a streaming client asked for usage (Chat `stream_options.include_usage`). */
  includeUsage?: boolean;
  /**
   * The client's dialect reports the prompt's token count when the stream starts (Anthropic
   * `message_start.usage.input_tokens`): the backend is asked for usage on every chunk
   * (`stream_options.continuous_usage_stats`, vLLM and SGLang), so the first chunk carries it.
   */
  promptUsageAtStart?: boolean;
  /**
   * Backend-specific keys forwarded verbatim into the chat body (e.g. vLLM `top_k`, `min_p`,
   * `chat_template_kwargs`). Set only by the dialect that knows the key is safe.
   */
  backendExtra?: Record<string, unknown>;
  /**
   * What the decoder dropped or changed on the way (e.g. `dropped tool web_search: a chat backend
   * cannot run it`). The edge logs them and returns them in the `x-iop-warnings` header.
   */
  warnings?: string[];
  /**
   * State a dialect decoder hands to its own encoder through `EncodeContext.request` (e.g. the
   * Responses fields a response echoes: instructions, tools as sent, metadata, store). Opaque to
   * every other layer, which copies it along unchanged.
   */
  dialectState?: unknown;
}
