/**
 * Validates `POST /v1/completions`, the legacy text completions (OpenAI API reference
 * "Completions › Create completion"; docs/protocols.md "Legacy completions"): `model`; `prompt`
 * a string, an array of strings, an array of token ids or an array of token-id arrays; `suffix`
 * (fill-in-the-middle; not with `echo`, as OpenAI answers); `echo`; `logprobs` 0–20 (OpenAI
 * allows 5, vLLM up to its `max_logprobs`, 20 by default; `-1`, the whole vocabulary, is refused);
 * `max_tokens` ≥ 0 (0 with `echo`: the prompt's logprobs alone); `n` 1–128; `best_of` only 1
 * (a stream cannot carry it and most backends lack it); `stop` a string or at most 4; `stream`,
 * `stream_options.include_usage`; the sampling fields in OpenAI's ranges. A bad field is a 400
 * in OpenAI's envelope naming it.
 */
import { invalidRequest } from '@iop/core';
import { isAbsent, isObject, openaiFields as fields, typeName } from '../shared/fields.js';
import type { AuxiliaryRequest } from './wire-types.js';

/** Prompts one request may carry (vLLM's `VLLM_MAX_COMPLETION_PROMPTS` is of this order). */
export const MAX_COMPLETION_PROMPTS = 2048;

export interface CompletionsRequest extends AuxiliaryRequest {
  /** Prompts in the request (choices = prompts × n). */
  prompts: number;
  n: number;
}

function isTokenId(value: unknown): boolean {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

/** Checks `prompt`; returns [prompts, prompt estimate in tokens]. */
function readPrompt(prompt: unknown): [number, number] {
  if (typeof prompt === 'string') return [1, Math.ceil(prompt.length / 4)];
  if (!Array.isArray(prompt))
    throw invalidRequest(`prompt must be a string or an array, got ${typeName(prompt)}`, 'prompt');
  if (prompt.length === 0) throw invalidRequest('prompt must not be an empty array', 'prompt');
  if (prompt.every((entry) => typeof entry === 'number')) {
    const bad = prompt.findIndex((token) => !isTokenId(token));
    if (bad !== -1) throw invalidRequest(`prompt.${bad} must be a token id (a non-negative integer)`, `prompt.${bad}`);
    return [1, prompt.length];
  }
  if (prompt.length > MAX_COMPLETION_PROMPTS)
    throw invalidRequest(`prompt must have at most ${MAX_COMPLETION_PROMPTS} entries`, 'prompt');
  let estimate = 0;
  const strings = typeof prompt[0] === 'string';
  prompt.forEach((entry, index) => {
    const param = `prompt.${index}`;
    if (strings) {
      if (typeof entry !== 'string')
        throw invalidRequest(`${param} must be a string like the other entries, got ${typeName(entry)}`, param);
      estimate += Math.ceil(entry.length / 4);
      return;
    }
    if (!Array.isArray(entry) || entry.length === 0 || !entry.every(isTokenId))
      throw invalidRequest(`${param} must be a non-empty array of token ids like the other entries`, param);
    estimate += entry.length;
  });
  return [prompt.length, estimate];
}

function readStop(stop: unknown): void {
  if (isAbsent(stop) || typeof stop === 'string') return;
  if (!Array.isArray(stop) || !stop.every((entry) => typeof entry === 'string'))
    throw invalidRequest('stop must be a string or an array of strings', 'stop');
  if (stop.length > 4) throw invalidRequest(`stop must have at most 4 sequences, got ${stop.length}`, 'stop');
}

/**
 * @throws IopError `invalid_request` (400) naming the field.
 */
export function readCompletionsRequest(body: unknown): CompletionsRequest {
  if (!isObject(body)) throw invalidRequest('the request body must be a JSON object');
  const model = fields.readString(body.model, 'model');
  if (isAbsent(body.prompt)) throw invalidRequest('prompt is required', 'prompt');
  const [prompts, promptTokensEstimate] = readPrompt(body.prompt);
  const suffix = fields.optionalString(body.suffix, 'suffix');
  const echo = fields.optionalBoolean(body.echo, 'echo') ?? false;
  if (echo && suffix !== undefined && suffix !== '') throw invalidRequest('echo is not supported with suffix', 'echo');
  fields.optionalInteger(body.logprobs, 'logprobs', { min: 0, max: 20 });
  const maxTokens = fields.optionalInteger(body.max_tokens, 'max_tokens', { min: 0, max: 1 << 24 });
  if (maxTokens === 0 && !echo) throw invalidRequest('max_tokens must be at least 1 (0 only with echo)', 'max_tokens');
  const n = fields.optionalInteger(body.n, 'n', { min: 1, max: 128 }) ?? 1;
  const bestOf = fields.optionalInteger(body.best_of, 'best_of', { min: 1, max: 128 });
  if (bestOf !== undefined && bestOf > 1)
    throw invalidRequest('best_of greater than 1 is not supported: ask for n completions and pick', 'best_of');
  readStop(body.stop);
  const stream = fields.optionalBoolean(body.stream, 'stream') ?? false;
  let includeUsage = false;
  if (!isAbsent(body.stream_options)) {
    const options = fields.readObject(body.stream_options, 'stream_options');
    includeUsage = fields.optionalBoolean(options.include_usage, 'stream_options.include_usage') ?? false;
  }
  fields.optionalNumber(body.temperature, 'temperature', { min: 0, max: 2 });
  fields.optionalNumber(body.top_p, 'top_p', { min: 0, max: 1 });
  fields.optionalNumber(body.presence_penalty, 'presence_penalty', { min: -2, max: 2 });
  fields.optionalNumber(body.frequency_penalty, 'frequency_penalty', { min: -2, max: 2 });
  fields.optionalInteger(body.seed, 'seed', { min: -(2 ** 53 - 1), max: 2 ** 53 - 1 });
  if (!isAbsent(body.logit_bias)) fields.readObject(body.logit_bias, 'logit_bias');
  fields.optionalString(body.user, 'user');
  return { model, stream, includeUsage: stream && includeUsage, promptTokensEstimate, backendFields: {}, prompts, n };
}
