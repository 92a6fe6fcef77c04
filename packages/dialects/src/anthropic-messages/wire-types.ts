/**
 * Anthropic Messages wire types (`POST /v1/messages`), the subset iop reads and writes. Source: docs/protocols.md
 * "Messages request", "Messages response", "Messages stream", "Messages errors" (and the official `@anthropic-ai/sdk`
 * types, `resources/messages/messages.ts`, `resources/shared.ts`).
 *
 * Request types describe what a client may send; the decoder still validates every field it reads, because the body is
 * untrusted JSON. Response and stream types describe what iop emits.
 */

// ---------------------------------------------------------------- request

export interface CacheControl {
  type: 'ephemeral';
  ttl?: '5m' | '1h';
}

export interface TextBlockParam {
  type: 'text';
  text: string;
  cache_control?: CacheControl | null;
  citations?: unknown;
}

export type ImageSource =
  | { type: 'base64'; media_type: 'image/jpeg' | 'image/png' | 'image/gif' | 'image/webp'; data: string }
  | { type: 'url'; url: string }
  | { type: 'file'; file_id: string };

export interface ImageBlockParam {
  type: 'image';
  source: ImageSource;
  cache_control?: CacheControl | null;
}

export type DocumentSource =
  | { type: 'base64'; media_type: 'application/pdf'; data: string }
  | { type: 'text'; media_type: 'text/plain'; data: string }
  | { type: 'content'; content: string | Array<TextBlockParam | ImageBlockParam> }
  | { type: 'url'; url: string }
  | { type: 'file'; file_id: string };

export interface DocumentBlockParam {
  type: 'document';
  source: DocumentSource;
  title?: string | null;
  context?: string | null;
  citations?: unknown;
  cache_control?: CacheControl | null;
}

export interface ToolUseBlockParam {
  type: 'tool_use';
  id: string;
  name: string;
  input: Record<string, unknown>;
  cache_control?: CacheControl | null;
}

export interface ToolResultBlockParam {
  type: 'tool_result';
  tool_use_id: string;
  content?: string | Array<TextBlockParam | ImageBlockParam | DocumentBlockParam>;
  is_error?: boolean;
  cache_control?: CacheControl | null;
}

export interface ThinkingBlockParam {
  type: 'thinking';
  thinking: string;
  signature: string;
}

export interface RedactedThinkingBlockParam {
  type: 'redacted_thinking';
  data: string;
}

export type ContentBlockParam =
  | TextBlockParam
  | ImageBlockParam
  | DocumentBlockParam
  | ToolUseBlockParam
  | ToolResultBlockParam
  | ThinkingBlockParam
  | RedactedThinkingBlockParam;

/**
 * `role: "system"` inside `messages` is what Claude Code sends (docs/protocols.md "Claude Code"); iop folds it into
 * instructions.
 */
export interface MessageParam {
  role: 'user' | 'assistant' | 'system';
  content: string | ContentBlockParam[];
}

export interface ToolParam {
  name: string;
  description?: string;
  input_schema: { type: 'object'; [key: string]: unknown };
  type?: 'custom' | null;
  strict?: boolean;
  cache_control?: CacheControl | null;
}

export type ToolChoiceParam =
  | { type: 'auto'; disable_parallel_tool_use?: boolean }
  | { type: 'any'; disable_parallel_tool_use?: boolean }
  | { type: 'tool'; name: string; disable_parallel_tool_use?: boolean }
  | { type: 'none' };

export type ThinkingConfigParam =
  | { type: 'enabled'; budget_tokens: number; display?: string }
  | { type: 'adaptive'; display?: string }
  | { type: 'disabled' };

export interface OutputConfigParam {
  effort?: 'low' | 'medium' | 'high' | 'xhigh' | 'max';
  format?: { type: 'json_schema'; schema: Record<string, unknown> } | null;
}

export interface MessageCreateParams {
  model: string;
  max_tokens: number;
  messages: MessageParam[];
  system?: string | TextBlockParam[];
  tools?: ToolParam[];
  tool_choice?: ToolChoiceParam;
  stop_sequences?: string[];
  temperature?: number;
  top_p?: number;
  top_k?: number;
  thinking?: ThinkingConfigParam;
  output_config?: OutputConfigParam;
  metadata?: { user_id?: string | null };
  stream?: boolean;
}

/** `POST /v1/messages/count_tokens` body (C.6): no `max_tokens`, no `stream`. */
export type CountTokensParams = Omit<MessageCreateParams, 'max_tokens' | 'stream'>;

// ---------------------------------------------------------------- response

export type StopReason = 'end_turn' | 'max_tokens' | 'stop_sequence' | 'tool_use' | 'refusal' | 'pause_turn';

/** Usage as Anthropic reports it: `input_tokens` excludes cached tokens (docs/protocols.md "Usage"). */
export interface AnthropicUsage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number | null;
  cache_read_input_tokens: number | null;
}

export interface TextBlock {
  type: 'text';
  text: string;
  citations: null;
}

export interface ThinkingBlock {
  type: 'thinking';
  thinking: string;
  signature: string;
}

export interface ToolUseBlock {
  type: 'tool_use';
  id: string;
  name: string;
  input: Record<string, unknown>;
}

export type ContentBlock = TextBlock | ThinkingBlock | ToolUseBlock;

export interface AnthropicMessage {
  id: string;
  type: 'message';
  role: 'assistant';
  model: string;
  content: ContentBlock[];
  stop_reason: StopReason | null;
  stop_sequence: string | null;
  usage: AnthropicUsage;
}

// ---------------------------------------------------------------- stream (docs/protocols.md "Messages stream")

export type ContentBlockStart =
  | { type: 'text'; text: '' }
  | { type: 'thinking'; thinking: ''; signature: '' }
  | { type: 'tool_use'; id: string; name: string; input: Record<string, never> };

export type ContentBlockDelta =
  | { type: 'text_delta'; text: string }
  | { type: 'thinking_delta'; thinking: string }
  | { type: 'signature_delta'; signature: string }
  | { type: 'input_json_delta'; partial_json: string };

/**
 * `message_delta.usage`: cumulative totals; the SDK overwrites only the non-null fields (docs/protocols.md "Messages
 * stream").
 */
export interface MessageDeltaUsage {
  output_tokens: number;
  input_tokens?: number;
  cache_creation_input_tokens?: number;
  cache_read_input_tokens?: number;
}

export type AnthropicErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'permission_error'
  | 'not_found_error'
  | 'request_too_large'
  | 'rate_limit_error'
  | 'api_error'
  | 'timeout_error'
  | 'overloaded_error';

/**
 * Error body (docs/protocols.md "Messages errors"); the same object, without `request_id`, is the data of an `event:
 * error`.
 */
export interface AnthropicErrorBody {
  type: 'error';
  error: { type: AnthropicErrorType; message: string };
  request_id?: string | null;
}

/** `POST /v1/messages/count_tokens` response (C.6). */
export interface CountTokensResponse {
  input_tokens: number;
}
