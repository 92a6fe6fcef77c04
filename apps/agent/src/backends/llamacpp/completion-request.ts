/**
 * Reads a legacy `POST /v1/completions` request (OpenAI API reference "Completions"; docs/protocols.md
 * "Legacy completions") into what the embedded backend generates from. Bad input throws a 400
 * IopError naming the field.
 */
import { invalidRequest } from '@iop/core';
import { optionalBoolean, optionalNumber, parseJsonObject, stopOf } from './chat-request.js';
import type { Token } from './library.js';

export interface CompletionParams {
  model: string;
  /** One entry per prompt: text, or token ids. */
  prompts: Array<string | Token[]>;
  /** Fill-in-the-middle: the text after the gap (`prompt` is the text before it). */
  suffix: string | undefined;
  echo: boolean;
  /** Completion tokens per choice; OpenAI's and vLLM's default is 16. 0 only with `echo`. */
  maxTokens: number;
  n: number;
  stop: string[];
  stream: boolean;
  includeUsage: boolean;
  temperature: number | undefined;
  topP: number | undefined;
  seed: number | undefined;
  /** What the embedded backend cannot honour (`logprobs`): sent back in `x-iop-warnings`. */
  warnings: string[];
}

/** OpenAI's and vLLM's `max_tokens` default for legacy completions. */
export const DEFAULT_COMPLETION_TOKENS = 16;

function isTokens(value: unknown): value is Token[] {
  return (
    Array.isArray(value) &&
    value.length > 0 &&
    value.every((token) => typeof token === 'number' && Number.isSafeInteger(token) && token >= 0)
  );
}

function promptsOf(prompt: unknown): Array<string | Token[]> {
  if (typeof prompt === 'string' || isTokens(prompt)) return [prompt];
  if (
    Array.isArray(prompt) &&
    prompt.length > 0 &&
    prompt.every((entry) => typeof entry === 'string' || isTokens(entry))
  )
    return prompt as Array<string | Token[]>;
  throw invalidRequest(
    'prompt must be a string, an array of strings, an array of token ids or an array of token-id arrays',
    'prompt',
  );
}

/** Parses the JSON body of `POST /v1/completions`. */
export function parseCompletionRequest(raw: Uint8Array): CompletionParams {
  const body = parseJsonObject(raw);
  if (typeof body.model !== 'string') throw invalidRequest('model must be a string', 'model');
  const echo = optionalBoolean(body.echo, 'echo') ?? false;
  const suffix = body.suffix === undefined || body.suffix === null || body.suffix === '' ? undefined : body.suffix;
  if (suffix !== undefined && typeof suffix !== 'string') throw invalidRequest('suffix must be a string', 'suffix');
  const maxTokens =
    optionalNumber(body.max_tokens, 'max_tokens', echo ? 0 : 1, 1 << 24, true) ?? DEFAULT_COMPLETION_TOKENS;
  const stream = optionalBoolean(body.stream, 'stream') ?? false;
  const options = body.stream_options as { include_usage?: unknown } | null | undefined;
  if (options !== undefined && options !== null && typeof options !== 'object')
    throw invalidRequest('stream_options must be an object', 'stream_options');
  const warnings: string[] = [];
  const logprobs = optionalNumber(body.logprobs, 'logprobs', 0, 20, true);
  if (logprobs !== undefined) warnings.push('logprobs are not supported by the embedded backend: logprobs is null');
  return {
    model: body.model,
    prompts: promptsOf(body.prompt),
    suffix,
    echo,
    maxTokens,
    n: optionalNumber(body.n, 'n', 1, 128, true) ?? 1,
    stop: stopOf(body.stop),
    stream,
    includeUsage: stream && (optionalBoolean(options?.include_usage, 'stream_options.include_usage') ?? false),
    temperature: optionalNumber(body.temperature, 'temperature', 0, 2, false),
    topP: optionalNumber(body.top_p, 'top_p', 0, 1, false),
    seed: optionalNumber(body.seed, 'seed', -(2 ** 53), 2 ** 53, true),
    warnings,
  };
}
