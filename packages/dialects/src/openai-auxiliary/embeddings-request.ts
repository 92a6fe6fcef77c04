/**
 * Validates `POST /v1/embeddings` (OpenAI API reference "Embeddings › Create embeddings";
 * docs/protocols.md "Embeddings"): `model`; `input` a non-empty string, an array of 1–2048
 * non-empty strings, an array of token ids, or an array of 1–2048 non-empty token-id arrays;
 * `encoding_format` `float` (default) or `base64`; `dimensions` a positive integer; `user` a
 * string. Anything else is a 400 in OpenAI's envelope with `param` naming the field.
 *
 * The backend is always asked for floats (`encoding_format: "float"`): llama.cpp server's base64
 * is not certain, vLLM's `bytes` formats are not JSON, and the edge encodes base64 itself
 * (`embedding-encode.ts`), so every backend answers the client the same way.
 */
import { invalidRequest } from '@iop/core';
import { isAbsent, isObject, openaiFields as fields, typeName } from '../shared/fields.js';
import type { AuxiliaryRequest } from './wire-types.js';

/** OpenAI's limit on the entries of an array `input`. */
export const MAX_EMBEDDING_INPUTS = 2048;

export type EncodingFormat = 'float' | 'base64';

export interface EmbeddingsRequest extends AuxiliaryRequest {
  encodingFormat: EncodingFormat;
  /** Number of inputs (vectors the answer must hold). */
  inputs: number;
}

/** A token id: a non-negative safe integer. */
function isTokenId(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

function checkTokens(tokens: unknown[], param: string): void {
  if (tokens.length === 0) throw invalidRequest(`${param} must not be an empty array of tokens`, param);
  const bad = tokens.findIndex((token) => !isTokenId(token));
  if (bad !== -1)
    throw invalidRequest(
      `${param}.${bad} must be a token id (a non-negative integer), got ${JSON.stringify(tokens[bad])}`,
      `${param}.${bad}`,
    );
}

/** Characters (strings) or tokens (token arrays) of `input`, checked; returns [inputs, prompt estimate]. */
function readInput(input: unknown): [number, number] {
  if (typeof input === 'string') {
    if (input === '') throw invalidRequest("input must not be an empty string ('$.input' is invalid)", 'input');
    return [1, Math.ceil(input.length / 4)];
  }
  if (!Array.isArray(input))
    throw invalidRequest(`input must be a string or an array, got ${typeName(input)}`, 'input');
  if (input.length === 0) throw invalidRequest('input must not be an empty array', 'input');
  if (input.every((entry) => typeof entry === 'number')) {
    checkTokens(input, 'input');
    return [1, input.length];
  }
  if (input.length > MAX_EMBEDDING_INPUTS)
    throw invalidRequest(`input must have at most ${MAX_EMBEDDING_INPUTS} entries, got ${input.length}`, 'input');
  let estimate = 0;
  if (typeof input[0] === 'string') {
    input.forEach((entry, index) => {
      if (typeof entry !== 'string')
        throw invalidRequest(
          `input.${index} must be a string like the other entries, got ${typeName(entry)}`,
          `input.${index}`,
        );
      if (entry === '') throw invalidRequest(`input.${index} must not be an empty string`, `input.${index}`);
      estimate += Math.ceil(entry.length / 4);
    });
    return [input.length, estimate];
  }
  input.forEach((entry, index) => {
    if (!Array.isArray(entry))
      throw invalidRequest(
        `input.${index} must be an array of token ids like the other entries, got ${typeName(entry)}`,
        `input.${index}`,
      );
    checkTokens(entry, `input.${index}`);
    estimate += entry.length;
  });
  return [input.length, estimate];
}

/**
 * @throws IopError `invalid_request` (400) naming the field.
 */
export function readEmbeddingsRequest(body: unknown): EmbeddingsRequest {
  if (!isObject(body)) throw invalidRequest('the request body must be a JSON object');
  const model = fields.readString(body.model, 'model');
  if (body.input === undefined) throw invalidRequest('input is required', 'input');
  const [inputs, promptTokensEstimate] = readInput(body.input);
  const encodingFormat = isAbsent(body.encoding_format)
    ? 'float'
    : fields.readEnum(body.encoding_format, 'encoding_format', ['float', 'base64'] as const);
  fields.optionalInteger(body.dimensions, 'dimensions', { min: 1, max: 1 << 20 });
  fields.optionalString(body.user, 'user');
  return {
    model,
    stream: false,
    includeUsage: false,
    promptTokensEstimate,
    backendFields: { encoding_format: 'float' },
    encodingFormat,
    inputs,
  };
}
