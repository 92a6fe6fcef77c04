/**
 * Anthropic Messages request body → hub `InferenceRequest` (docs/protocols.md "Messages request", "System
 * instructions", "Tool definitions and choice", "Tool calls and ids", "Tool results", "Images and files", "Finish
 * reasons", "Usage", "Reasoning", "Responses input and Chat messages", "What cannot be mapped").
 *
 * Field decisions (each one documented where Anthropic's behaviour and a chat backend differ):
 * - `max_tokens` is required, an integer ≥ 1. Anthropic also accepts `0` to pre-warm its prompt cache; a chat backend
 *   cannot produce an empty completion, and answering with one token would change what the client gets, so `0` is a 400
 *   naming `max_tokens` (D policy: 400 over a silent change).
 * - `temperature` 0–1 and `top_p` 0–1 as Anthropic validates them; `top_k` an integer ≥ 0.
 * - `stop_sequences`: any number of strings (Anthropic sets no count limit; neither does iop).
 * - `thinking`: `enabled` (`budget_tokens` ≥ 1024, Anthropic's minimum) or `adaptive` turn reasoning on; `disabled` or
 *   absent turn it off (a thinking model does not reason unless asked). The `budget_tokens < max_tokens` rule is not
 *   enforced: interleaved thinking lifts it.
 * - `output_config.effort` → `reasoning.effort`; `output_config.format` json_schema → `responseFormat`.
 * - `metadata.user_id` → `user`.
 * - Tolerated and ignored: `service_tier`, `inference_geo`, top-level `cache_control`; ignored with a warning:
 *   `context_management`, `container` and any field iop does not know. `mcp_servers` (a non-empty list) is a 400: the
 *   backend cannot reach them.
 * @throws IopError `invalid_request` / `unsupported_field` (400) with `param` naming the field.
 */
import type { InferenceRequest, ReasoningConfig, ResponseFormat, ToolDefinition } from '@iop/core';
import { IopError, invalidRequest } from '@iop/core';
import { anthropicFields, isAbsent, path, type JsonObject } from '../shared/fields.js';
import { decodeSystemContent, referencedTools } from './content-decode.js';
import { decodeMessages } from './messages-decode.js';
import { decodeToolChoice, decodeTools } from './tools-decode.js';
import { assertJsonDepth } from '../shared/json-depth.js';

const { readArray, readBoolean, readEnum, readInteger, readNumber, readObject, readString } = anthropicFields;

/** Fields this decoder reads. */
const KNOWN_FIELDS = new Set([
  'model',
  'max_tokens',
  'messages',
  'system',
  'tools',
  'tool_choice',
  'stop_sequences',
  'temperature',
  'top_p',
  'top_k',
  'thinking',
  'output_config',
  'metadata',
  'stream',
  'mcp_servers',
]);

/** Fields that change nothing a chat backend does: ignored without a warning. */
const SILENTLY_IGNORED = new Set(['service_tier', 'inference_geo', 'cache_control']);

/** Anthropic's minimum `thinking.budget_tokens` (docs/protocols.md "Messages request"). */
export const MIN_THINKING_BUDGET_TOKENS = 1024;

const EFFORTS = ['low', 'medium', 'high', 'xhigh', 'max'] as const;

export interface DecodeOptions {
  /** `count_tokens` bodies (docs/protocols.md "Token counting") have no `max_tokens` and no `stream`. Default false. */
  countTokens?: boolean;
}

function decodeReasoning(body: JsonObject): ReasoningConfig {
  const reasoning: ReasoningConfig = { enabled: false };
  if (!isAbsent(body.thinking)) {
    const thinking = readObject(body.thinking, 'thinking');
    const type = readEnum(thinking.type, 'thinking.type', ['enabled', 'adaptive', 'disabled'] as const);
    if (type === 'enabled') {
      reasoning.enabled = true;
      reasoning.budgetTokens = readInteger(thinking.budget_tokens, 'thinking.budget_tokens', {
        min: MIN_THINKING_BUDGET_TOKENS,
      });
    } else if (type === 'adaptive') {
      reasoning.enabled = true;
    }
    // `display: "omitted"` (Claude Code 2.1.332 sends it): thinking blocks without their text, signature kept.
    if (reasoning.enabled && !isAbsent(thinking.display))
      reasoning.display = readEnum(thinking.display, 'thinking.display', ['summarized', 'omitted'] as const);
  }
  if (!isAbsent(body.output_config)) {
    const outputConfig = readObject(body.output_config, 'output_config');
    if (!isAbsent(outputConfig.effort))
      reasoning.effort = readEnum(outputConfig.effort, 'output_config.effort', EFFORTS);
  }
  return reasoning;
}

function decodeResponseFormat(body: JsonObject): ResponseFormat | undefined {
  if (isAbsent(body.output_config)) return undefined;
  const outputConfig = readObject(body.output_config, 'output_config');
  if (isAbsent(outputConfig.format)) return undefined;
  const format = readObject(outputConfig.format, 'output_config.format');
  readEnum(format.type, 'output_config.format.type', ['json_schema'] as const);
  const schema = readObject(format.schema, 'output_config.format.schema');
  assertJsonDepth(schema, 'output_config.format.schema');
  return { type: 'json_schema', name: 'response', schema, strict: true };
}

function collectWarnings(body: JsonObject): string[] {
  const warnings: string[] = [];
  for (const key of Object.keys(body)) {
    if (KNOWN_FIELDS.has(key) || SILENTLY_IGNORED.has(key)) continue;
    if (key === 'context_management') warnings.push('ignored context_management: the backend keeps the full context');
    else if (key === 'container') warnings.push('ignored container: no server-side container on this backend');
    else warnings.push(`ignored unknown field ${key}`);
  }
  if (!isAbsent(body.mcp_servers) && readArray(body.mcp_servers, 'mcp_servers').length > 0) {
    throw new IopError('unsupported_field', 'mcp_servers: remote MCP servers cannot be reached from this backend', {
      param: 'mcp_servers',
    });
  }
  return warnings;
}

/**
 * Decodes a `POST /v1/messages` body (or, with `countTokens`, a `count_tokens` body).
 * @throws IopError 400 naming the offending field.
 */
export function decodeMessagesRequest(body: unknown, options: DecodeOptions = {}): InferenceRequest {
  const root = readObject(body, 'body');
  const model = readString(root.model, 'model');
  if (model.length === 0) throw invalidRequest('model: must not be empty', 'model');

  const warnings = collectWarnings(root);
  const messages = decodeMessages(root.messages);
  if (!isAbsent(root.system)) messages.unshift({ role: 'system', content: decodeSystemContent(root.system, 'system') });

  const request: InferenceRequest = { model, messages, stream: false, reasoning: decodeReasoning(root) };

  if (options.countTokens !== true) {
    if (root.max_tokens === undefined) throw invalidRequest('max_tokens: field required', 'max_tokens');
    if (root.max_tokens === 0) {
      throw invalidRequest(
        'max_tokens: 0 (prompt cache pre-warming) is not supported by this backend; use 1 or more',
        'max_tokens',
      );
    }
    request.maxOutputTokens = readInteger(root.max_tokens, 'max_tokens', { min: 1 });
    const budget = request.reasoning?.budgetTokens;
    if (budget !== undefined && budget >= request.maxOutputTokens) {
      // docs/protocols.md "Messages request": `budget_tokens` must be ≥ 1024 and < `max_tokens`.
      throw invalidRequest(
        `thinking.budget_tokens: must be less than max_tokens (${request.maxOutputTokens}), got ${budget}`,
        'thinking.budget_tokens',
      );
    }
    if (!isAbsent(root.stream)) request.stream = readBoolean(root.stream, 'stream');
    if (request.stream) {
      request.includeUsage = true;
      request.promptUsageAtStart = true; // message_start carries input_tokens
    }
  }

  let declared: ToolDefinition[] = [];
  if (!isAbsent(root.tools)) {
    declared = decodeTools(root.tools);
    // Tool search: a deferred tool is offered once a tool_reference loaded it.
    const referenced = declared.some((tool) => tool.deferLoading === true) ? referencedTools(root.messages) : undefined;
    request.tools =
      referenced === undefined
        ? declared
        : declared.filter((tool) => tool.deferLoading !== true || referenced.has(tool.name));
  }
  if (!isAbsent(root.tool_choice)) {
    const decoded = decodeToolChoice(root.tool_choice, declared);
    request.toolChoice = decoded.toolChoice;
    if (decoded.parallelToolCalls === false) request.parallelToolCalls = false;
  }
  if (!isAbsent(root.stop_sequences)) {
    request.stop = readArray(root.stop_sequences, 'stop_sequences').map((item, i) =>
      readString(item, path('stop_sequences', i)),
    );
  }
  if (!isAbsent(root.temperature))
    request.temperature = readNumber(root.temperature, 'temperature', { min: 0, max: 1 });
  if (!isAbsent(root.top_p)) request.topP = readNumber(root.top_p, 'top_p', { min: 0, max: 1 });
  if (!isAbsent(root.top_k)) request.topK = readInteger(root.top_k, 'top_k', { min: 0 });
  const responseFormat = decodeResponseFormat(root);
  if (responseFormat !== undefined) request.responseFormat = responseFormat;
  if (!isAbsent(root.metadata)) {
    const metadata = readObject(root.metadata, 'metadata');
    if (!isAbsent(metadata.user_id)) request.user = readString(metadata.user_id, 'metadata.user_id');
  }
  if (warnings.length > 0) request.warnings = warnings;
  return request;
}
