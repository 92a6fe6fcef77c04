/**
 * `POST /v1/embeddings` on the embedded backend (OpenAI API reference "Embeddings"; docs/protocols.md
 * "Embeddings"): one vector per input from the model's embedding context (node-llama-cpp
 * `LlamaEmbeddingContext`, llama.cpp's pooled embedding), L2-normalised as llama.cpp server's
 * `/v1/embeddings` answers. `dimensions` keeps the first n components and normalises again
 * (Matryoshka truncation); more than the model has is a 400. `encoding_format: "base64"` gives
 * the little-endian float32 bytes in base64, as OpenAI does. Usage is exact: the tokens each
 * input evaluates to (`calculateInputLength`).
 */
import { IopError, invalidRequest } from '@iop/core';
import type { BackendResponse } from '../backend.js';
import { optionalNumber, parseJsonObject } from './chat-request.js';
import type { LlamaEmbeddingContext, Token } from './library.js';

export interface EmbeddingsParams {
  model: string;
  inputs: Array<string | Token[]>;
  dimensions: number | undefined;
  base64: boolean;
}

function isTokenList(value: unknown): value is Token[] {
  return (
    Array.isArray(value) &&
    value.length > 0 &&
    value.every((token) => typeof token === 'number' && Number.isSafeInteger(token) && token >= 0)
  );
}

/** Parses the body; 400 naming the field otherwise. */
export function parseEmbeddingsRequest(raw: Uint8Array): EmbeddingsParams {
  const body = parseJsonObject(raw);
  if (typeof body.model !== 'string') throw invalidRequest('model must be a string', 'model');
  const { input } = body;
  let inputs: Array<string | Token[]>;
  if (typeof input === 'string' || isTokenList(input)) inputs = [input];
  else if (
    Array.isArray(input) &&
    input.length > 0 &&
    input.every((entry) => typeof entry === 'string' || isTokenList(entry))
  )
    inputs = input as Array<string | Token[]>;
  else
    throw invalidRequest(
      'input must be a string, an array of strings, an array of token ids or an array of token-id arrays',
      'input',
    );
  if (inputs.some((entry) => entry === '')) throw invalidRequest('input must not contain an empty string', 'input');
  const format = body.encoding_format ?? 'float';
  if (format !== 'float' && format !== 'base64')
    throw invalidRequest("encoding_format must be 'float' or 'base64'", 'encoding_format');
  return {
    model: body.model,
    inputs,
    dimensions: optionalNumber(body.dimensions, 'dimensions', 1, 1 << 20, true),
    base64: format === 'base64',
  };
}

/** `vector` scaled to unit length (unchanged when all zero). */
function normalized(vector: readonly number[]): number[] {
  const norm = Math.sqrt(vector.reduce((sum, value) => sum + value * value, 0));
  return norm === 0 ? [...vector] : vector.map((value) => value / norm);
}

function base64Of(vector: readonly number[]): string {
  const bytes = Buffer.allocUnsafe(vector.length * 4);
  vector.forEach((value, index) => bytes.writeFloatLE(value, index * 4));
  return bytes.toString('base64');
}

/**
 * Computes the answer. `contextSize`: the most tokens one input may have.
 * @throws IopError 400 (an input longer than the context, `dimensions` above the model's).
 */
export async function createEmbeddings(
  context: LlamaEmbeddingContext,
  params: EmbeddingsParams,
  contextSize: number,
  signal: AbortSignal,
): Promise<BackendResponse> {
  let promptTokens = 0;
  const data: Array<{ object: 'embedding'; index: number; embedding: number[] | string }> = [];
  for (const [index, input] of params.inputs.entries()) {
    const tokens = context.calculateInputLength(input);
    if (tokens > contextSize)
      throw new IopError(
        'context_length_exceeded',
        `This model's maximum context length is ${contextSize} tokens. However, input ${index} has ${tokens} tokens. Please reduce the length of the input.`,
        { param: 'input' },
      );
    if (signal.aborted) throw signal.reason;
    const { vector } = await context.getEmbeddingFor(input);
    if (params.dimensions !== undefined && params.dimensions > vector.length)
      throw invalidRequest(
        `dimensions must be at most ${vector.length} for this model, got ${params.dimensions}`,
        'dimensions',
      );
    const unit = normalized(params.dimensions === undefined ? vector : vector.slice(0, params.dimensions));
    data.push({ object: 'embedding', index, embedding: params.base64 ? base64Of(unit) : unit });
    promptTokens += tokens;
  }
  const bytes = Buffer.from(
    JSON.stringify({
      object: 'list',
      data,
      model: params.model,
      usage: { prompt_tokens: promptTokens, total_tokens: promptTokens },
    }),
  );
  return {
    status: 200,
    headers: { 'content-type': 'application/json; charset=utf-8', 'content-length': String(bytes.length) },
    body: (async function* () {
      yield bytes;
    })(),
  };
}
