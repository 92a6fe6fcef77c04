/**
 * Client Chat Completions body → `InferenceRequest` (docs/protocols.md "Chat request", "Tool definitions and choice",
 * "What cannot be mapped").
 *
 * Honoured: model, messages, tools (function), tool_choice (incl. `allowed_tools`, which filters `tools`),
 * parallel_tool_calls, max_completion_tokens ?? max_tokens, temperature, top_p, top_k, seed, stop, response_format,
 * reasoning_effort, user / safety_identifier, prompt_cache_key, stream, stream_options.include_usage. Passed to the
 * backend as is (`backendExtra`; vLLM, SGLang and llama.cpp take them): frequency_penalty, presence_penalty,
 * logit_bias, min_p, repetition_penalty, chat_template_kwargs. Rejected (400 `unsupported_field`): n > 1, logprobs:
 * true, audio output, custom tools, web_search_options, functions/function_call. Dropped with a warning: metadata,
 * store, service_tier, prediction, verbosity. Unknown keys are ignored.
 */
import {
  IopError,
  invalidRequest,
  type InferenceRequest,
  type ReasoningConfig,
  type ResponseFormat,
  type ToolChoice,
  type ToolDefinition,
} from '@iop/core';
import { openaiFields, isObject, typeName, type JsonObject } from '../shared/fields.js';
import { decodeMessages } from './messages-decode.js';
import { assertJsonDepth } from '../shared/json-depth.js';

const { optionalBoolean, optionalInteger, optionalNumber, optionalString, readArray, readObject, readString } =
  openaiFields;

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const EFFORTS = new Set(['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max']);
const EXTRA_KEYS = [
  'frequency_penalty',
  'presence_penalty',
  'logit_bias',
  'min_p',
  'repetition_penalty',
  'chat_template_kwargs',
] as const;
const DROPPED_KEYS = ['metadata', 'store', 'service_tier', 'prediction', 'verbosity'] as const;

function unsupported(message: string, param: string): IopError {
  return new IopError('unsupported_field', message, { param });
}

/** What passthrough (same-dialect relay) needs, validated cheaply without building the hub request. */
export interface ChatRequestPeek {
  model: string;
  stream: boolean;
  includeUsage: boolean;
}

/**
 * Validates only model (string), messages (non-empty array), stream (boolean) and
 * stream_options.include_usage (boolean). @throws IopError `invalid_request` naming the field.
 */
export function peekChatRequest(body: unknown): ChatRequestPeek {
  if (!isObject(body)) throw invalidRequest(`request body must be a JSON object, got ${typeName(body)}`);
  const model = readString(body.model, 'model');
  if (model.length === 0) throw invalidRequest('model must not be empty', 'model');
  const messages = readArray(body.messages, 'messages');
  if (messages.length === 0) throw invalidRequest('messages must contain at least one message', 'messages');
  const stream = optionalBoolean(body.stream, 'stream') ?? false;
  let includeUsage = false;
  if (body.stream_options !== undefined && body.stream_options !== null) {
    const options = readObject(body.stream_options, 'stream_options');
    includeUsage = optionalBoolean(options.include_usage, 'stream_options.include_usage') ?? false;
  }
  return { model, stream, includeUsage: stream && includeUsage };
}

/** A JSON Schema object at most `MAX_JSON_DEPTH` levels deep. @throws IopError 400 naming `param`. */
function schemaObject(value: unknown, param: string): JsonObject {
  const schema = readObject(value, param);
  assertJsonDepth(schema, param);
  return schema;
}

function decodeTools(value: unknown): ToolDefinition[] {
  return readArray(value, 'tools').map((raw, i): ToolDefinition => {
    const param = `tools[${i}]`;
    const tool = readObject(raw, param);
    if (tool.type !== 'function') {
      if (tool.type === 'custom')
        throw unsupported('custom tools are not supported; use function tools', `${param}.type`);
      throw invalidRequest(`${param}.type must be "function", got ${JSON.stringify(tool.type)}`, `${param}.type`);
    }
    const fn = readObject(tool.function, `${param}.function`);
    const name = readString(fn.name, `${param}.function.name`);
    if (!TOOL_NAME.test(name))
      throw invalidRequest(`${param}.function.name must match ^[a-zA-Z0-9_-]{1,64}$`, `${param}.function.name`);
    const definition: ToolDefinition = { name, parameters: { type: 'object', properties: {} } };
    if (fn.parameters !== undefined && fn.parameters !== null)
      definition.parameters = schemaObject(fn.parameters, `${param}.function.parameters`);
    const description = optionalString(fn.description, `${param}.function.description`);
    if (description !== undefined) definition.description = description;
    const strict = optionalBoolean(fn.strict, `${param}.function.strict`);
    if (strict !== undefined) definition.strict = strict;
    return definition;
  });
}

function namedFunction(value: unknown, param: string): string {
  const choice = readObject(value, param);
  return readString(readObject(choice.function, `${param}.function`).name, `${param}.function.name`);
}

/**
 * tool_choice; `allowed_tools` narrows `tools` in place of a tool choice the backend lacks (docs/protocols.md "Tool
 * definitions and choice").
 */
function decodeToolChoice(
  value: unknown,
  tools: ToolDefinition[] | undefined,
): { choice: ToolChoice; tools: ToolDefinition[] | undefined } {
  const known = (name: string, param: string): void => {
    if (!tools?.some((tool) => tool.name === name))
      throw invalidRequest(`${param} names tool ${JSON.stringify(name)}, which is not in tools`, param);
  };
  if (value === 'auto' || value === 'none' || value === 'required') return { choice: { type: value }, tools };
  if (!isObject(value))
    throw invalidRequest(
      `tool_choice must be "auto", "none", "required" or an object, got ${JSON.stringify(value) ?? typeName(value)}`,
      'tool_choice',
    );
  const choice = value;
  if (choice.type === 'function') {
    const name = namedFunction(choice, 'tool_choice');
    known(name, 'tool_choice.function.name');
    return { choice: { type: 'tool', name }, tools };
  }
  if (choice.type === 'allowed_tools') {
    const allowed = readObject(choice.allowed_tools, 'tool_choice.allowed_tools');
    const mode = allowed.mode;
    if (mode !== 'auto' && mode !== 'required')
      throw invalidRequest('tool_choice.allowed_tools.mode must be auto or required', 'tool_choice.allowed_tools.mode');
    const names = new Set(
      readArray(allowed.tools, 'tool_choice.allowed_tools.tools').map((entry, i) => {
        const param = `tool_choice.allowed_tools.tools[${i}]`;
        const name = namedFunction(entry, param);
        known(name, `${param}.function.name`);
        return name;
      }),
    );
    return { choice: { type: mode }, tools: tools?.filter((tool) => names.has(tool.name)) };
  }
  if (choice.type === 'custom') throw unsupported('custom tools are not supported', 'tool_choice.type');
  throw invalidRequest(
    'tool_choice must be auto, none, required, or {type:"function", function:{name}}',
    'tool_choice',
  );
}

function decodeResponseFormat(value: unknown): ResponseFormat {
  const format = readObject(value, 'response_format');
  if (format.type === 'text' || format.type === 'json_object') return { type: format.type };
  if (format.type !== 'json_schema')
    throw invalidRequest('response_format.type must be text, json_object or json_schema', 'response_format.type');
  const spec = readObject(format.json_schema, 'response_format.json_schema');
  const result: ResponseFormat = {
    type: 'json_schema',
    name: readString(spec.name, 'response_format.json_schema.name'),
    schema:
      spec.schema === undefined || spec.schema === null
        ? {}
        : schemaObject(spec.schema, 'response_format.json_schema.schema'),
  };
  const strict = optionalBoolean(spec.strict, 'response_format.json_schema.strict');
  if (strict !== undefined) result.strict = strict;
  const description = optionalString(spec.description, 'response_format.json_schema.description');
  if (description !== undefined) result.description = description;
  return result;
}

function decodeStop(value: unknown): string[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'string') return [value];
  if (!Array.isArray(value))
    throw invalidRequest(`stop must be a string or an array of strings, got ${typeName(value)}`, 'stop');
  return value.map((entry, i) => readString(entry, `stop[${i}]`));
}

function decodeUnsupported(body: JsonObject, relayed: boolean): void {
  const n = optionalInteger(body.n, 'n', { min: 1 });
  const logprobs = optionalBoolean(body.logprobs, 'logprobs');
  optionalInteger(body.top_logprobs, 'top_logprobs', { min: 0, max: 20 });
  // A relayed request reaches a backend that answers n > 1 and logprobs itself (vLLM, SGLang, llama.cpp server).
  if (!relayed && n !== undefined && n > 1) throw unsupported('n > 1 is not supported: iop returns one choice', 'n');
  if (!relayed && logprobs === true) throw unsupported('logprobs are not supported', 'logprobs');
  if (body.audio !== undefined && body.audio !== null) throw unsupported('audio output is not supported', 'audio');
  if (Array.isArray(body.modalities) && body.modalities.some((m) => m !== 'text'))
    throw unsupported('only text output is supported', 'modalities');
  if (body.web_search_options !== undefined) throw unsupported('web search is not supported', 'web_search_options');
  if (body.functions !== undefined)
    throw unsupported('functions is deprecated and not supported; use tools', 'functions');
  if (body.function_call !== undefined)
    throw unsupported('function_call is deprecated and not supported; use tool_choice', 'function_call');
}

/**
 * Validates a client Chat Completions body and decodes it into the hub request.
 * @throws IopError `invalid_request` / `unsupported_field` (400) with `param` naming the field.
 */
export function decodeChatRequest(body: unknown): InferenceRequest {
  return decode(body, false);
}

/** What the relay (passthrough path) needs of a validated request. */
export interface ChatPassthroughRequest extends ChatRequestPeek {
  /**
   * `max_completion_tokens ?? max_tokens` when the body names `max_completion_tokens`: the relay
   * then sends it as `max_tokens` alone (what every backend takes), as the normalized path does.
   */
  maxTokensRewrite: number | undefined;
}

/**
 * Validates a body for the passthrough path with the same rules and the same 400s as the
 * translated path (`decodeChatRequest`), except that `n > 1` and `logprobs` are left to the
 * backend. @throws IopError `invalid_request` / `unsupported_field` (400) naming the field.
 */
export function validateChatPassthrough(body: unknown): ChatPassthroughRequest {
  const request = decode(body, true);
  const object = body as JsonObject;
  const rewrite =
    object.max_completion_tokens !== undefined && object.max_completion_tokens !== null
      ? request.maxOutputTokens
      : undefined;
  return {
    model: request.model,
    stream: request.stream,
    includeUsage: request.includeUsage === true,
    maxTokensRewrite: rewrite,
  };
}

function decode(body: unknown, relayed: boolean): InferenceRequest {
  const peek = peekChatRequest(body);
  const object = body as JsonObject;
  decodeUnsupported(object, relayed);
  const request: InferenceRequest = {
    model: peek.model,
    messages: decodeMessages(object.messages),
    stream: peek.stream,
  };
  if (peek.includeUsage) request.includeUsage = true;
  const warnings: string[] = [];

  let tools = object.tools === undefined || object.tools === null ? undefined : decodeTools(object.tools);
  if (object.tool_choice !== undefined && object.tool_choice !== null) {
    const decoded = decodeToolChoice(object.tool_choice, tools);
    request.toolChoice = decoded.choice;
    tools = decoded.tools;
  }
  if (tools !== undefined && tools.length > 0) request.tools = tools;
  const parallel = optionalBoolean(object.parallel_tool_calls, 'parallel_tool_calls');
  if (parallel !== undefined) request.parallelToolCalls = parallel;

  const maxTokens =
    optionalInteger(object.max_completion_tokens, 'max_completion_tokens', { min: 1 }) ??
    optionalInteger(object.max_tokens, 'max_tokens', { min: 1 });
  if (maxTokens !== undefined) request.maxOutputTokens = maxTokens;
  const temperature = optionalNumber(object.temperature, 'temperature', { min: 0, max: 2 });
  if (temperature !== undefined) request.temperature = temperature;
  const topP = optionalNumber(object.top_p, 'top_p', { min: 0, max: 1 });
  if (topP !== undefined) request.topP = topP;
  const topK = optionalInteger(object.top_k, 'top_k', { min: -1 });
  if (topK !== undefined) request.topK = topK;
  const seed = optionalInteger(object.seed, 'seed', { min: Number.MIN_SAFE_INTEGER });
  if (seed !== undefined) request.seed = seed;
  const stop = decodeStop(object.stop);
  if (stop !== undefined && stop.length > 0) request.stop = stop;
  if (object.response_format !== undefined && object.response_format !== null)
    request.responseFormat = decodeResponseFormat(object.response_format);

  const effort = optionalString(object.reasoning_effort, 'reasoning_effort');
  if (effort !== undefined) {
    if (!EFFORTS.has(effort))
      throw invalidRequest(`reasoning_effort must be one of ${[...EFFORTS].join(', ')}`, 'reasoning_effort');
    const reasoning: ReasoningConfig = { enabled: effort !== 'none' };
    if (effort !== 'none') reasoning.effort = effort;
    request.reasoning = reasoning;
  }
  const user = optionalString(object.user, 'user') ?? optionalString(object.safety_identifier, 'safety_identifier');
  if (user !== undefined) request.user = user;
  const cacheKey = optionalString(object.prompt_cache_key, 'prompt_cache_key');
  if (cacheKey !== undefined) request.promptCacheKey = cacheKey;

  for (const key of EXTRA_KEYS) {
    if (object[key] === undefined || object[key] === null) continue;
    request.backendExtra ??= {};
    request.backendExtra[key] = object[key];
  }
  for (const key of DROPPED_KEYS) {
    if (object[key] !== undefined && object[key] !== null)
      warnings.push(`dropped ${key}: a self-hosted backend does not use it`);
  }
  if (warnings.length > 0) request.warnings = warnings;
  return request;
}
