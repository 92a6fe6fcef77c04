/**
 * OpenAI Responses wire shapes iop writes (docs/protocols.md "Responses object", "Responses stream"; openai-node v6
 * `resources/responses/responses.ts`). Request bodies are read field by field from `unknown`
 * (request-decode.ts), so only what iop emits or stores is typed here.
 */

export type ResponseStatus = 'completed' | 'failed' | 'in_progress' | 'cancelled' | 'queued' | 'incomplete';
export type ItemStatus = 'in_progress' | 'completed' | 'incomplete';

export interface OutputTextPart {
  type: 'output_text';
  text: string;
  annotations: unknown[];
  logprobs: unknown[];
}

export interface ReasoningTextPart {
  type: 'reasoning_text';
  text: string;
}

export interface MessageItem {
  type: 'message';
  id: string;
  role: 'assistant';
  status: ItemStatus;
  content: OutputTextPart[];
}

export interface ReasoningItem {
  type: 'reasoning';
  id: string;
  summary: { type: 'summary_text'; text: string }[];
  content?: ReasoningTextPart[];
  /** The upstream's opaque reasoning signature, when it gave one. */
  encrypted_content?: string | null;
  status?: ItemStatus;
}

export interface FunctionCallItem {
  type: 'function_call';
  id: string;
  call_id: string;
  name: string;
  /** JSON-encoded arguments. */
  arguments: string;
  status: ItemStatus;
  /** The `namespace` tool the function belongs to. */
  namespace?: string;
}

export interface CustomToolCallItem {
  type: 'custom_tool_call';
  id: string;
  call_id: string;
  name: string;
  /** The freeform text input. */
  input: string;
  status: ItemStatus;
  namespace?: string;
}

export type OutputItem = MessageItem | ReasoningItem | FunctionCallItem | CustomToolCallItem;

export interface ResponseUsage {
  input_tokens: number;
  input_tokens_details: { cached_tokens: number; cache_write_tokens: number };
  output_tokens: number;
  output_tokens_details: { reasoning_tokens: number };
  total_tokens: number;
}

/** `Response.error.code` values the SDK types allow that iop uses. */
export type ResponseErrorCode = 'server_error' | 'rate_limit_exceeded' | 'invalid_prompt';

export interface IncompleteDetails {
  reason: 'max_output_tokens' | 'content_filter';
}

/**
 * The Response object (docs/protocols.md "Responses object"), streamed in lifecycle events and returned by non-stream
 * requests.
 */
export interface ResponseObject {
  id: string;
  object: 'response';
  created_at: number;
  status: ResponseStatus;
  /** Unix seconds; null until the response ends. */
  completed_at: number | null;
  background: boolean;
  error: { code: ResponseErrorCode; message: string } | null;
  incomplete_details: IncompleteDetails | null;
  instructions: string | null;
  max_output_tokens: number | null;
  model: string;
  output: OutputItem[];
  /** SDK convenience (joined `output_text` parts); set on non-stream bodies and `result()`. */
  output_text?: string;
  parallel_tool_calls: boolean;
  previous_response_id: string | null;
  prompt_cache_key: string | null;
  reasoning: { effort: string | null; summary: string | null };
  safety_identifier: string | null;
  store: boolean;
  temperature: number | null;
  text: { format: Record<string, unknown>; verbosity: string };
  tool_choice: unknown;
  tools: unknown[];
  top_p: number | null;
  truncation: 'auto' | 'disabled';
  usage: ResponseUsage | null;
  user: string | null;
  metadata: Record<string, string>;
}

/** Input items as stored for `GET /v1/responses/{id}/input_items`: the client's items, each with an `id`. */
export type StoredInputItem = Record<string, unknown> & { id: string; type: string };
