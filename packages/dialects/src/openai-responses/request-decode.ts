/**
 * Client Responses body → `InferenceRequest` (docs/protocols.md "Responses request", "System instructions", "Tool
 * definitions and choice", "Responses input and Chat messages", "What cannot be mapped", "Codex CLI").
 *
 * Honoured: model, input, instructions (first system message, this request only), tools, tool_choice,
 * parallel_tool_calls, text.format (json_schema / json_object), max_output_tokens, reasoning.effort (`none` or absent →
 * reasoning off), temperature, top_p, prompt_cache_key, safety_identifier ?? user, stream. Kept for the response and
 * the store (`dialectState`): metadata, store (default true), previous_response_id, include, text.verbosity,
 * reasoning.summary (echoed, not produced: a warning says so), truncation. Accepted and ignored: client_metadata,
 * service_tier, stream_options, prompt_cache_retention, prompt_cache_options, moderation. Rejected (400
 * `unsupported_field`, ignoring them would change the output contract): stop, n > 1, top_logprobs > 0, background:
 * true, conversation, prompt. Dropped with a warning (sampling/caching tuning or unknown keys): everything else.
 */
import { IopError, invalidRequest, type InferenceRequest, type ReasoningConfig, type ResponseFormat } from '@iop/core';
import { openaiFields, isObject, typeName } from '../shared/fields.js';
import { decodeInput, noToolCallFor } from './messages-decode.js';
import { defaultRequestState, type ResponsesRequestState } from './request-state.js';
import { decodeToolChoice, decodeTools } from './tools-decode.js';
import { assertJsonDepth } from '../shared/json-depth.js';

const { optionalBoolean, optionalInteger, optionalNumber, optionalString, readArray, readObject, readString } =
  openaiFields;

const EFFORTS = new Set(['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max']);
const SUMMARIES = new Set(['auto', 'concise', 'detailed']);
const SCHEMA_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/** Keys read by this decoder or deliberately accepted without effect. */
const KNOWN_KEYS = new Set([
  'model',
  'input',
  'instructions',
  'tools',
  'tool_choice',
  'parallel_tool_calls',
  'text',
  'max_output_tokens',
  'reasoning',
  'temperature',
  'top_p',
  'metadata',
  'store',
  'previous_response_id',
  'include',
  'prompt_cache_key',
  'user',
  'safety_identifier',
  'stream',
  'truncation',
  'client_metadata',
  'service_tier',
  'stream_options',
  'prompt_cache_retention',
  'prompt_cache_options',
  'moderation',
  'n',
  'stop',
  'top_logprobs',
  'background',
  'conversation',
  'prompt',
]);

function unsupported(message: string, param: string): IopError {
  return new IopError('unsupported_field', message, { param });
}

function rejectContractChanges(body: Record<string, unknown>): void {
  if (body.stop !== undefined && body.stop !== null)
    throw unsupported('stop does not exist in the Responses API', 'stop');
  if (body.n !== undefined && body.n !== null && body.n !== 1) throw unsupported('n > 1 is not supported', 'n');
  if (typeof body.top_logprobs === 'number' && body.top_logprobs > 0)
    throw unsupported('top_logprobs is not supported on this server', 'top_logprobs');
  if (body.background === true) throw unsupported('background responses are not supported', 'background');
  if (body.conversation !== undefined && body.conversation !== null)
    throw unsupported('conversations are not supported; use previous_response_id', 'conversation');
  if (body.prompt !== undefined && body.prompt !== null)
    throw unsupported('prompt templates are not supported; send input', 'prompt');
}

function decodeTextFormat(value: unknown): {
  format: Record<string, unknown>;
  responseFormat: ResponseFormat | undefined;
} {
  if (value === undefined || value === null) return { format: { type: 'text' }, responseFormat: undefined };
  const format = readObject(value, 'text.format');
  switch (format.type) {
    case 'text':
      return { format, responseFormat: undefined };
    case 'json_object':
      return { format, responseFormat: { type: 'json_object' } };
    case 'json_schema': {
      const name = readString(format.name, 'text.format.name');
      if (!SCHEMA_NAME.test(name))
        throw invalidRequest('text.format.name must match ^[a-zA-Z0-9_-]{1,64}$', 'text.format.name');
      const responseFormat: ResponseFormat = {
        type: 'json_schema',
        name,
        schema: readObject(format.schema, 'text.format.schema'),
      };
      assertJsonDepth(responseFormat.schema, 'text.format.schema');
      const strict = optionalBoolean(format.strict, 'text.format.strict');
      if (strict !== undefined) responseFormat.strict = strict;
      const description = optionalString(format.description, 'text.format.description');
      if (description !== undefined) responseFormat.description = description;
      return { format, responseFormat };
    }
    default:
      throw invalidRequest(
        `text.format.type must be text, json_object or json_schema, got ${JSON.stringify(format.type)}`,
        'text.format.type',
      );
  }
}

function decodeReasoning(value: unknown): { config: ReasoningConfig; effort: string | null; summary: string | null } {
  if (value === undefined || value === null) return { config: { enabled: false }, effort: null, summary: null };
  const reasoning = readObject(value, 'reasoning');
  const effort = optionalString(reasoning.effort, 'reasoning.effort') ?? null;
  if (effort !== null && !EFFORTS.has(effort))
    throw invalidRequest(`reasoning.effort must be one of ${[...EFFORTS].join(', ')}`, 'reasoning.effort');
  const summary = optionalString(reasoning.summary ?? reasoning.generate_summary, 'reasoning.summary') ?? null;
  if (summary !== null && !SUMMARIES.has(summary))
    throw invalidRequest('reasoning.summary must be auto, concise or detailed', 'reasoning.summary');
  const config: ReasoningConfig = effort === null || effort === 'none' ? { enabled: false } : { enabled: true, effort };
  return { config, effort, summary };
}

function decodeMetadata(value: unknown): Record<string, string> {
  if (value === undefined || value === null) return {};
  const metadata = readObject(value, 'metadata');
  for (const [key, entry] of Object.entries(metadata)) readString(entry, `metadata.${key}`);
  return metadata as Record<string, string>;
}

/**
 * Validates a Responses body and decodes it into the hub request; the Responses-only fields go to
 * `dialectState` (`responsesStateOf`). @throws IopError 400 (`invalid_request` /
 * `unsupported_field`) naming the field.
 */
export function decodeResponsesRequest(body: unknown): InferenceRequest {
  if (!isObject(body)) throw invalidRequest(`request body must be a JSON object, got ${typeName(body)}`);
  const model = readString(body.model, 'model');
  if (model.length === 0) throw invalidRequest('model must not be empty', 'model');
  rejectContractChanges(body);
  const warnings: string[] = [];

  const previousResponseId = optionalString(body.previous_response_id, 'previous_response_id') ?? null;
  if (body.input === undefined && previousResponseId === null) throw invalidRequest('input is required', 'input');
  const input = decodeInput(body.input, warnings);
  const instructions = optionalString(body.instructions, 'instructions') ?? null;
  if (input.messages.length === 0 && instructions === null && previousResponseId === null) {
    // Every item was dropped (hosted-tool or unknown item types): say so rather than "empty".
    const why =
      input.items.length === 0
        ? 'input must contain at least one item'
        : `input has no item a chat backend can take${warnings.length === 0 ? '' : ` (${warnings.slice(0, 3).join('; ')})`}`;
    throw invalidRequest(why, 'input');
  }

  const unpaired = input.unpairedToolOutputs[0];
  if (unpaired !== undefined && previousResponseId === null) throw noToolCallFor(unpaired);

  const state: ResponsesRequestState = defaultRequestState();
  state.instructions = instructions;
  state.inputItems = input.items;
  state.previousResponseId = previousResponseId;
  state.unpairedToolOutputs = input.unpairedToolOutputs;
  const request: InferenceRequest = {
    model,
    messages:
      instructions === null
        ? input.messages
        : [{ role: 'system', content: [{ type: 'text', text: instructions }] }, ...input.messages],
    stream: optionalBoolean(body.stream, 'stream') ?? false,
    dialectState: state,
  };

  if (body.tools !== undefined && body.tools !== null) {
    state.tools = readArray(body.tools, 'tools');
    const { choice, tools } = decodeToolChoice(body.tool_choice, decodeTools(body.tools, warnings));
    if (tools.length > 0) request.tools = tools;
    if (choice !== undefined) request.toolChoice = choice;
  } else if (
    body.tool_choice !== undefined &&
    body.tool_choice !== null &&
    body.tool_choice !== 'auto' &&
    body.tool_choice !== 'none'
  ) {
    throw invalidRequest('tool_choice needs tools', 'tool_choice');
  }
  if (body.tool_choice !== undefined && body.tool_choice !== null) state.toolChoice = body.tool_choice;

  const parallel = optionalBoolean(body.parallel_tool_calls, 'parallel_tool_calls');
  if (parallel !== undefined) {
    request.parallelToolCalls = parallel;
    state.parallelToolCalls = parallel;
  }
  const maxOutputTokens = optionalInteger(body.max_output_tokens, 'max_output_tokens', { min: 1 });
  if (maxOutputTokens !== undefined) request.maxOutputTokens = state.maxOutputTokens = maxOutputTokens;
  const temperature = optionalNumber(body.temperature, 'temperature', { min: 0, max: 2 });
  if (temperature !== undefined) request.temperature = state.temperature = temperature;
  const topP = optionalNumber(body.top_p, 'top_p', { min: 0, max: 1 });
  if (topP !== undefined) request.topP = state.topP = topP;

  if (body.text !== undefined && body.text !== null) {
    const text = readObject(body.text, 'text');
    const { format, responseFormat } = decodeTextFormat(text.format);
    if (responseFormat !== undefined) request.responseFormat = responseFormat;
    state.text = { format, verbosity: optionalString(text.verbosity, 'text.verbosity') ?? 'medium' };
  }
  const reasoning = decodeReasoning(body.reasoning);
  request.reasoning = reasoning.config;
  state.reasoning = { effort: reasoning.effort, summary: reasoning.summary };
  // A chat backend has no reasoning summarizer: rather than an empty summary passed off as one, the client is told.
  if (reasoning.summary !== null) {
    warnings.push(
      `dropped reasoning.summary ${reasoning.summary}: no summarizer on this server, reasoning items carry the reasoning text (reasoning_text) and an empty summary`,
    );
  }

  state.metadata = decodeMetadata(body.metadata);
  state.store = optionalBoolean(body.store, 'store') ?? true;
  if (body.include !== undefined && body.include !== null) {
    state.include = readArray(body.include, 'include').map((entry, i) => readString(entry, `include[${i}]`));
    if (state.include.includes('message.output_text.logprobs'))
      warnings.push('include message.output_text.logprobs: logprobs are not available, sent as []');
  }
  const promptCacheKey = optionalString(body.prompt_cache_key, 'prompt_cache_key');
  if (promptCacheKey !== undefined) request.promptCacheKey = state.promptCacheKey = promptCacheKey;
  state.user = optionalString(body.user, 'user') ?? null;
  state.safetyIdentifier = optionalString(body.safety_identifier, 'safety_identifier') ?? null;
  const user = state.safetyIdentifier ?? state.user;
  if (user !== null) request.user = user;
  const truncation = body.truncation ?? 'disabled';
  if (truncation !== 'auto' && truncation !== 'disabled')
    throw invalidRequest('truncation must be "auto" or "disabled"', 'truncation');
  state.truncation = truncation;

  for (const key of Object.keys(body))
    if (!KNOWN_KEYS.has(key)) warnings.push(`dropped ${key}: not supported on this server`);
  if (warnings.length > 0) request.warnings = warnings;
  return request;
}
