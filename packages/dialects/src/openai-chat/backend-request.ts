/**
 * InferenceRequest → the Chat Completions body a backend serves (vLLM, SGLang, llama.cpp server, Ollama, the embedded
 * backend; docs/protocols.md "Chat request", "Backend extras", "System instructions", "Tool definitions and choice",
 * "Tool calls and ids", "Tool results", "Images and files").
 *
 * Choices made for open-model backends:
 * - `system` and `developer` messages go out as `system` by default: many open-model chat templates reject `developer`
 *   (`developerRole` option). All of them are folded, in order, into one leading system message (Claude Code sends
 *   system messages mid-conversation; Mistral and Gemma templates reject a non-leading system message), and user
 *   messages left adjacent are merged so roles still alternate.
 * - Reasoning parts in history are dropped (no backend takes reasoning input; docs/protocols.md "Reasoning").
 * - Tool results: Chat tool messages carry text only. Images and files of a tool result move into one synthetic `user`
 *   message right after the run of tool messages, labelled with the call id (docs/protocols.md "Tool results").
 *   `isError` has no Chat field: the content gets an `Error: ` prefix (`Error` when empty) so the model still sees the
 *   failure, and a warning says so (docs/protocols.md "Tool results", "What cannot be mapped").
 * - `max_tokens` (every backend takes it; vLLM also takes `max_completion_tokens`).
 * - Streaming always asks for usage: `stream_options: {include_usage: true}` (docs/protocols.md "Usage"), and on every
 *   chunk (`continuous_usage_stats: true`, vLLM and SGLang; other servers ignore the key) when the client's dialect
 *   reports the prompt count at the start (`promptUsageAtStart`).
 * - Reasoning switch: `chat_template_kwargs: {enable_thinking}` (Qwen3-style templates on vLLM and SGLang) when
 *   `request.reasoning` is set; `reasoning_effort` only for low/medium/high (vLLM validates the value).
 *   `reasoningSwitch: 'none'` sends neither.
 * - `tool_choice`/`parallel_tool_calls` are sent only with tools (vLLM rejects a tool_choice without tools).
 * - `backendExtra` is merged last; a `chat_template_kwargs` object in it is merged key by key.
 */
import type { ContentPart, InferenceRequest, Message, ResponseFormat, ToolChoice } from '@iop/core';
import { createToolIdMap, type ToolIdFormat, type ToolIdMap } from './tool-ids.js';
import type { ChatContentPart, ChatFunctionTool, ChatRequestMessage, ChatToolCall } from './wire-types.js';
import { isObject } from '../shared/fields.js';

export interface BackendRequestOptions {
  /** The backend's model id. */
  model: string;
  stream: boolean;
  /**
   * How to turn a thinking model's reasoning on/off. Default `chat_template_kwargs`
   * (`enable_thinking`, vLLM/SGLang Qwen3-style templates).
   */
  reasoningSwitch?: 'chat_template_kwargs' | 'none';
  /** Mistral-style backends need 9-char alphanumeric tool-call ids. Default `any`. */
  toolIdFormat?: ToolIdFormat;
  /** Role for system/developer instructions. Default `system` (open-model templates reject `developer`). */
  developerRole?: 'system' | 'developer';
  /**
   * Where Claude Code's per-conversation billing line (`x-anthropic-billing-header: …`, the first
   * line of its system prompt) goes: `end` (default) moves it to the end of the system prompt so
   * the prompt's long shared start stays one cacheable prefix across conversations; `drop`
   * removes it (a self-hosted backend bills nothing); `keep` leaves it in place.
   */
  billingHeader?: BillingHeaderPlacement;
}

export type BillingHeaderPlacement = 'end' | 'drop' | 'keep';

const BILLING_LINE = /^x-anthropic-billing-header:[^\n]*(\n|$)/gm;

export interface BackendChatRequest {
  body: Record<string, unknown>;
  /** Restores client tool-call ids in the decoded output (`toolIds.toClient(id)`). */
  toolIds: ToolIdMap;
  /** What was changed on the way (e.g. an `isError` flag carried as a prefix). */
  warnings: string[];
}

const EFFORTS = new Set(['low', 'medium', 'high']);

function textOf(parts: readonly ContentPart[], separator: string): string {
  let text = '';
  let first = true;
  for (const part of parts) {
    if (part.type !== 'text') continue;
    text += first ? part.text : separator + part.text;
    first = false;
  }
  return text;
}

function toChatPart(part: ContentPart): ChatContentPart {
  switch (part.type) {
    case 'text':
      return { type: 'text', text: part.text };
    case 'image':
      return {
        type: 'image_url',
        image_url: part.detail === undefined ? { url: part.url } : { url: part.url, detail: part.detail },
      };
    case 'file': {
      const file: { file_data: string; filename?: string } = {
        file_data: `data:${part.mediaType};base64,${part.data}`,
      };
      if (part.filename !== undefined) file.filename = part.filename;
      return { type: 'file', file };
    }
  }
}

/** A user message: a plain string when it is one text part (what every template takes), else parts. */
function userContent(parts: readonly ContentPart[]): string | ChatContentPart[] {
  if (parts.length === 1 && parts[0]!.type === 'text') return parts[0]!.text;
  return parts.map(toChatPart);
}

function toMessages(
  messages: readonly Message[],
  options: BackendRequestOptions,
  toolIds: ToolIdMap,
  warnings: string[],
): ChatRequestMessage[] {
  const out: ChatRequestMessage[] = [];
  const systemRole = options.developerRole ?? 'system';
  /** Non-text parts of the current run of tool messages, for the synthetic user message. */
  let toolMedia: ChatContentPart[] = [];
  const flushToolMedia = (): void => {
    if (toolMedia.length === 0) return;
    out.push({ role: 'user', content: toolMedia });
    toolMedia = [];
  };
  const instructions: string[] = [];
  let instructionRole: 'system' | 'developer' = 'system';
  for (const message of messages) {
    if (message.role !== 'tool') flushToolMedia();
    switch (message.role) {
      case 'system':
      case 'developer':
        if (instructions.length === 0 && message.role === 'developer') instructionRole = systemRole;
        instructions.push(textOf(message.content, '\n\n'));
        break;
      case 'user': {
        const previous = out.at(-1);
        const content = userContent(message.content);
        if (previous?.role === 'user') previous.content = mergeUserContent(previous.content, content);
        else out.push({ role: 'user', content });
        break;
      }
      case 'assistant': {
        let text = '';
        const toolCalls: ChatToolCall[] = [];
        for (const part of message.content) {
          if (part.type === 'text') text += part.text;
          else if (part.type === 'tool-call') {
            toolCalls.push({
              id: toolIds.toBackend(part.id),
              type: 'function',
              function: { name: part.name, arguments: part.arguments },
            });
          }
        }
        if (toolCalls.length > 0)
          out.push({ role: 'assistant', content: text.length > 0 ? text : null, tool_calls: toolCalls });
        else out.push({ role: 'assistant', content: text });
        break;
      }
      case 'tool': {
        const backendId = toolIds.toBackend(message.toolCallId);
        let content = textOf(message.content, '\n');
        if (message.isError === true) {
          content = content.length > 0 ? `Error: ${content}` : 'Error';
          warnings.push(
            `tool result ${message.toolCallId}: is_error carried as an "Error: " prefix (Chat has no such flag)`,
          );
        }
        out.push({ role: 'tool', tool_call_id: backendId, content });
        const media = message.content.filter((part) => part.type !== 'text');
        if (media.length > 0) {
          toolMedia.push({ type: 'text', text: `Attachments returned by tool call ${backendId}:` });
          for (const part of media) toolMedia.push(toChatPart(part));
          warnings.push(
            `tool result ${message.toolCallId}: ${media.length} image/file part(s) moved to a following user message`,
          );
        }
        break;
      }
    }
  }
  flushToolMedia();
  if (instructions.length > 0)
    out.unshift({
      role: instructionRole,
      content: placeBillingHeader(instructions.join('\n\n'), options.billingHeader ?? 'end'),
    });
  return out;
}

function mergeUserContent(a: string | ChatContentPart[], b: string | ChatContentPart[]): string | ChatContentPart[] {
  if (typeof a === 'string' && typeof b === 'string') return `${a}\n\n${b}`;
  const parts = (content: string | ChatContentPart[]): ChatContentPart[] =>
    typeof content === 'string' ? [{ type: 'text', text: content }] : content;
  return [...parts(a), ...parts(b)];
}

/** Moves (or drops) Claude Code's billing line out of the system prompt's start (`billingHeader`). */
export function placeBillingHeader(system: string, placement: BillingHeaderPlacement): string {
  if (placement === 'keep' || !system.includes('x-anthropic-billing-header:')) return system;
  const lines: string[] = [];
  const rest = system.replace(BILLING_LINE, (line) => {
    lines.push(line.replace(/\n$/, ''));
    return '';
  });
  if (placement === 'drop' || lines.length === 0) return rest.replace(/^\n+/, '');
  return `${rest.replace(/^\n+/, '').replace(/\n+$/, '')}\n\n${lines.join('\n')}`;
}

function toToolChoice(choice: ToolChoice): unknown {
  return choice.type === 'tool' ? { type: 'function', function: { name: choice.name } } : choice.type;
}

function toResponseFormat(format: ResponseFormat): unknown {
  if (format.type !== 'json_schema') return { type: format.type };
  const jsonSchema: Record<string, unknown> = { name: format.name, schema: format.schema };
  if (format.description !== undefined) jsonSchema.description = format.description;
  if (format.strict !== undefined) jsonSchema.strict = format.strict;
  return { type: 'json_schema', json_schema: jsonSchema };
}

/**
 * Builds the backend body for one attempt.
 * @returns the body (to `JSON.stringify`), the tool id map for the decoded output, and warnings.
 */
export function toBackendChatRequest(request: InferenceRequest, options: BackendRequestOptions): BackendChatRequest {
  const toolIds = createToolIdMap(options.toolIdFormat);
  const warnings: string[] = [];
  const body: Record<string, unknown> = {
    model: options.model,
    messages: toMessages(request.messages, options, toolIds, warnings),
  };
  // tool_choice and parallel_tool_calls only with tools: vLLM rejects a tool_choice without tools.
  if (request.tools !== undefined && request.tools.length > 0) {
    body.tools = request.tools.map((tool): ChatFunctionTool => {
      const fn: ChatFunctionTool['function'] = { name: tool.name };
      if (tool.description !== undefined) fn.description = tool.description;
      fn.parameters = tool.parameters;
      if (tool.strict !== undefined) fn.strict = tool.strict;
      return { type: 'function', function: fn };
    });
    if (request.toolChoice !== undefined) body.tool_choice = toToolChoice(request.toolChoice);
    if (request.parallelToolCalls !== undefined) body.parallel_tool_calls = request.parallelToolCalls;
  }
  if (request.maxOutputTokens !== undefined) body.max_tokens = request.maxOutputTokens;
  if (request.temperature !== undefined) body.temperature = request.temperature;
  if (request.topP !== undefined) body.top_p = request.topP;
  if (request.topK !== undefined) body.top_k = request.topK;
  if (request.seed !== undefined) body.seed = request.seed;
  if (request.stop !== undefined && request.stop.length > 0) body.stop = request.stop;
  if (request.responseFormat !== undefined) body.response_format = toResponseFormat(request.responseFormat);
  if (request.user !== undefined) body.user = request.user;
  if (
    request.reasoning !== undefined &&
    (options.reasoningSwitch ?? 'chat_template_kwargs') === 'chat_template_kwargs'
  ) {
    body.chat_template_kwargs = { enable_thinking: request.reasoning.enabled };
    const effort = request.reasoning.effort;
    if (request.reasoning.enabled && effort !== undefined && EFFORTS.has(effort)) body.reasoning_effort = effort;
  }
  body.stream = options.stream;
  if (options.stream)
    body.stream_options =
      request.promptUsageAtStart === true
        ? { include_usage: true, continuous_usage_stats: true }
        : { include_usage: true };
  const extra = request.backendExtra;
  if (extra !== undefined) {
    for (const key of Object.keys(extra)) {
      const value = extra[key];
      const current = body[key];
      if (key === 'chat_template_kwargs' && isObject(value) && isObject(current)) body[key] = { ...current, ...value };
      else body[key] = value;
    }
  }
  return { body, toolIds, warnings };
}
