/**
 * Reads an OpenAI Chat Completions request (docs/protocols.md "Chat request") into what the embedded backend
 * generates from. Bad input throws a 400 IopError naming the field.
 */
import { invalidRequest } from '@iop/core';
import type { ChatHistoryItem } from './library.js';

export type ResponseFormat =
  { type: 'text' } | { type: 'json_object' } | { type: 'json_schema'; schema: Record<string, unknown> };

export interface ChatParams {
  model: string;
  history: ChatHistoryItem[];
  stream: boolean;
  /** `stream_options.include_usage`. */
  includeUsage: boolean;
  /** `max_completion_tokens` ?? `max_tokens`; undefined = until the context is full. */
  maxTokens: number | undefined;
  stop: string[];
  temperature: number | undefined;
  topP: number | undefined;
  seed: number | undefined;
  responseFormat: ResponseFormat;
  /** What the embedded backend cannot honour (`n > 1`, `logprobs`): sent back in `x-iop-warnings`. */
  warnings: string[];
}

/** Parses the JSON body of `POST /v1/chat/completions`. */
export function parseChatRequest(body: Uint8Array): ChatParams {
  const request = parseJsonObject(body);
  if (typeof request.model !== 'string') throw invalidRequest('model must be a string', 'model');
  if (!Array.isArray(request.messages) || request.messages.length === 0) {
    throw invalidRequest('messages must be a non-empty array', 'messages');
  }
  const stream = optionalBoolean(request.stream, 'stream') ?? false;
  const streamOptions = request.stream_options;
  if (streamOptions !== undefined && streamOptions !== null && typeof streamOptions !== 'object') {
    throw invalidRequest('stream_options must be an object', 'stream_options');
  }
  const includeUsage =
    optionalBoolean(
      (streamOptions as { include_usage?: unknown } | null | undefined)?.include_usage,
      'stream_options.include_usage',
    ) ?? false;
  const maxTokens =
    optionalNumber(request.max_completion_tokens, 'max_completion_tokens', 1, 1 << 24, true) ??
    optionalNumber(request.max_tokens, 'max_tokens', 1, 1 << 24, true);
  const warnings: string[] = [];
  const n = optionalNumber(request.n, 'n', 1, 1 << 16, true);
  if (n !== undefined && n > 1)
    warnings.push(`n=${n} is not supported by the embedded backend: one choice is returned`);
  if (
    optionalBoolean(request.logprobs, 'logprobs') === true ||
    (request.top_logprobs !== undefined && request.top_logprobs !== null)
  ) {
    warnings.push('logprobs are not supported by the embedded backend: logprobs is null');
  }
  return {
    warnings,
    model: request.model,
    history: historyOf(request.messages as unknown[]),
    stream,
    includeUsage: stream && includeUsage,
    maxTokens,
    stop: stopOf(request.stop),
    temperature: optionalNumber(request.temperature, 'temperature', 0, 2, false),
    topP: optionalNumber(request.top_p, 'top_p', 0, 1, false),
    seed: optionalNumber(request.seed, 'seed', -(2 ** 53), 2 ** 53, true),
    responseFormat: responseFormatOf(request.response_format),
  };
}

/** Parses a JSON object body; 400 otherwise. */
export function parseJsonObject(body: Uint8Array): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8'));
  } catch {
    throw invalidRequest('the request body is not valid JSON');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw invalidRequest('the request body must be a JSON object');
  return value as Record<string, unknown>;
}

/** OpenAI messages into node-llama-cpp chat history; a trailing empty model turn is what generation fills. */
export function historyOf(messages: unknown[]): ChatHistoryItem[] {
  const history: ChatHistoryItem[] = [];
  messages.forEach((message, index) => {
    if (typeof message !== 'object' || message === null)
      throw invalidRequest('each message must be an object', `messages[${index}]`);
    const { role, content } = message as { role?: unknown; content?: unknown };
    const text = textOf(content, index);
    switch (role) {
      case 'system':
      case 'developer':
        history.push({ type: 'system', text });
        break;
      case 'user':
      case 'tool':
        history.push({ type: 'user', text });
        break;
      case 'assistant':
        history.push({ type: 'model', response: [text] });
        break;
      default:
        throw invalidRequest('role must be one of system, developer, user, assistant, tool', `messages[${index}].role`);
    }
  });
  const last = history[history.length - 1];
  if (last?.type !== 'model') history.push({ type: 'model', response: [] });
  return history;
}

function textOf(content: unknown, index: number): string {
  if (content === undefined || content === null) return '';
  if (typeof content === 'string') return content;
  if (!Array.isArray(content))
    throw invalidRequest('content must be a string or an array of parts', `messages[${index}].content`);
  let text = '';
  content.forEach((part: unknown, partIndex) => {
    const typed = part as { type?: unknown; text?: unknown } | null;
    if (typed?.type !== 'text' || typeof typed.text !== 'string') {
      throw invalidRequest('only text parts are supported by this model', `messages[${index}].content[${partIndex}]`);
    }
    text += typed.text;
  });
  return text;
}

export function stopOf(stop: unknown): string[] {
  if (stop === undefined || stop === null) return [];
  const list = typeof stop === 'string' ? [stop] : stop;
  if (!Array.isArray(list) || list.length > 4 || !list.every((item) => typeof item === 'string' && item !== '')) {
    throw invalidRequest('stop must be a non-empty string or an array of up to 4 non-empty strings', 'stop');
  }
  return list as string[];
}

function responseFormatOf(format: unknown): ResponseFormat {
  if (format === undefined || format === null) return { type: 'text' };
  const typed = format as { type?: unknown; json_schema?: { schema?: unknown } };
  switch (typed.type) {
    case 'text':
    case 'json_object':
      return { type: typed.type };
    case 'json_schema': {
      const schema = typed.json_schema?.schema;
      if (typeof schema !== 'object' || schema === null) {
        throw invalidRequest(
          'response_format.json_schema.schema must be an object',
          'response_format.json_schema.schema',
        );
      }
      return { type: 'json_schema', schema: schema as Record<string, unknown> };
    }
    default:
      throw invalidRequest('response_format.type must be text, json_object or json_schema', 'response_format.type');
  }
}

export function optionalBoolean(value: unknown, param: string): boolean | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'boolean') throw invalidRequest(`${param} must be a boolean`, param);
  return value;
}

export function optionalNumber(
  value: unknown,
  param: string,
  min: number,
  max: number,
  integer: boolean,
): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (
    typeof value !== 'number' ||
    !Number.isFinite(value) ||
    value < min ||
    value > max ||
    (integer && !Number.isInteger(value))
  ) {
    throw invalidRequest(`${param} must be ${integer ? 'an integer' : 'a number'} in [${min}, ${max}]`, param);
  }
  return value;
}
