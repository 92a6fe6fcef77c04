/**
 * Reading a `POST /v1/chat/completions` body (docs/protocols.md "Chat request") into the few fields the sim acts on.
 * Unknown fields are ignored, as vLLM does (docs/protocols.md "Backend extras"). Validation mirrors vLLM's 400s.
 */
import { SimInputError } from './sim-error.js';
import { contentText } from './tokenizer.js';
import type { DeclaredTool } from './tool-arguments.js';

export interface ChatRequest {
  /** The requested model name, suffix included. */
  model: string;
  messages: readonly unknown[];
  stream: boolean;
  /** `stream_options.include_usage`; vLLM defaults it to true once `stream_options` is present. */
  includeUsage: boolean;
  /** `stream_options.continuous_usage_stats` (vLLM). */
  continuousUsage: boolean;
  /** `max_completion_tokens ?? max_tokens` (tokens), undefined when neither is set. */
  maxTokens: number | undefined;
  stop: readonly string[];
  tools: readonly DeclaredTool[];
  toolChoice: unknown;
  /** `parallel_tool_calls`, default true. */
  parallelToolCalls: boolean;
  /** Request `seed`, which overrides the `seed` knob. */
  seed: number | undefined;
  /** `response_format`: JSON output instead of words (`json_schema` fills the schema). */
  responseFormat: { type: 'json_object' } | { type: 'json_schema'; schema: unknown } | undefined;
}

function readResponseFormat(value: unknown): ChatRequest['responseFormat'] {
  const format = value as { type?: unknown; json_schema?: { schema?: unknown } } | null | undefined;
  if (format?.type === 'json_object') return { type: 'json_object' };
  if (format?.type === 'json_schema') return { type: 'json_schema', schema: format.json_schema?.schema ?? {} };
  return undefined;
}

function optionalTokenCount(body: Record<string, unknown>, field: string): number | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isSafeInteger(value))
    throw new SimInputError(`'${field}' must be an integer`, { param: field });
  if (value < 1) throw new SimInputError(`max_tokens must be at least 1, got ${value}.`, { param: field });
  return value;
}

function readStop(value: unknown): string[] {
  if (value === undefined || value === null) return [];
  if (typeof value === 'string') return [value];
  if (Array.isArray(value) && value.every((entry) => typeof entry === 'string')) return value as string[];
  throw new SimInputError("'stop' must be a string or an array of strings", { param: 'stop' });
}

function readTools(value: unknown): DeclaredTool[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw new SimInputError("'tools' must be an array", { param: 'tools' });
  const tools: DeclaredTool[] = [];
  for (const tool of value as unknown[]) {
    const fn = (tool as { type?: unknown; function?: { name?: unknown; parameters?: unknown } } | null)?.function;
    if ((tool as { type?: unknown } | null)?.type !== 'function') continue; // custom tools have no schema to fill
    if (typeof fn?.name !== 'string')
      throw new SimInputError("'tools[].function.name' must be a string", { param: 'tools' });
    tools.push({ name: fn.name, parameters: fn.parameters });
  }
  return tools;
}

/**
 * Validates and reads a chat completion body.
 * @throws SimInputError (400) naming the offending field.
 */
export function readChatRequest(body: unknown): ChatRequest {
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw new SimInputError('request body must be a JSON object');
  const fields = body as Record<string, unknown>;
  if (typeof fields.model !== 'string' || fields.model.length === 0)
    throw new SimInputError("'model' must be a non-empty string", { param: 'model' });
  if (!Array.isArray(fields.messages)) throw new SimInputError("'messages' must be an array", { param: 'messages' });
  const stream = fields.stream === true;
  const streamOptions = fields.stream_options as
    { include_usage?: unknown; continuous_usage_stats?: unknown } | null | undefined;
  if (streamOptions !== undefined && streamOptions !== null && !stream) {
    throw new SimInputError('Stream options can only be defined when `stream=True`.', { param: 'stream_options' });
  }
  const seed = fields.seed;
  if (seed !== undefined && seed !== null && (typeof seed !== 'number' || !Number.isSafeInteger(seed)))
    throw new SimInputError("'seed' must be an integer", { param: 'seed' });
  return {
    model: fields.model,
    messages: fields.messages,
    stream,
    includeUsage: streamOptions !== undefined && streamOptions !== null && streamOptions.include_usage !== false,
    continuousUsage: streamOptions?.continuous_usage_stats === true,
    maxTokens: optionalTokenCount(fields, 'max_completion_tokens') ?? optionalTokenCount(fields, 'max_tokens'),
    stop: readStop(fields.stop),
    tools: readTools(fields.tools),
    toolChoice: fields.tool_choice,
    parallelToolCalls: fields.parallel_tool_calls !== false,
    seed: typeof seed === 'number' ? seed : undefined,
    responseFormat: readResponseFormat(fields.response_format),
  };
}

/** Text of the last `user` message (for content=echo). */
export function lastUserText(messages: readonly unknown[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i] as { role?: unknown; content?: unknown } | null;
    if (message?.role === 'user') return contentText(message.content);
  }
  return '';
}

/**
 * Tool calls to emit and the name they must use: none without tools or with `tool_choice:"none"`;
 * the `tool-calls` knob when set; else 1 for `required` or a named tool, 0 for `auto`.
 * `parallel_tool_calls:false` caps it at 1.
 * @throws SimInputError when `tool_choice` names a tool the request does not declare.
 */
export function resolveToolCalls(
  request: ChatRequest,
  knobCount: number | undefined,
  ignoreToolChoice = false,
): { count: number; forcedName: string | undefined } {
  if (ignoreToolChoice) {
    const count = request.tools.length === 0 ? 0 : (knobCount ?? 0);
    return { count: request.parallelToolCalls ? count : Math.min(count, 1), forcedName: undefined };
  }
  const choice = request.toolChoice as
    { type?: unknown; function?: { name?: unknown }; allowed_tools?: { mode?: unknown } } | string | null | undefined;
  if (request.tools.length === 0 || choice === 'none') return { count: 0, forcedName: undefined };
  let forcedName: string | undefined;
  if (
    typeof choice === 'object' &&
    choice !== null &&
    choice.type === 'function' &&
    typeof choice.function?.name === 'string'
  ) {
    forcedName = choice.function.name;
    if (!request.tools.some((tool) => tool.name === forcedName)) {
      throw new SimInputError(`Tool '${forcedName}' has not been passed in \`tools\`.`, { param: 'tool_choice' });
    }
  }
  const required =
    choice === 'required' ||
    forcedName !== undefined ||
    (typeof choice === 'object' && choice?.allowed_tools?.mode === 'required');
  const count = knobCount ?? (required ? 1 : 0);
  return { count: request.parallelToolCalls ? count : Math.min(count, 1), forcedName };
}
