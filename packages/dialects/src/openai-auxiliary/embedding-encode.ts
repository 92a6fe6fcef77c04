/**
 * The embeddings answer as the client asked for it (OpenAI API reference "Embeddings › The
 * embedding object"; openai-node `src/internal/utils/base64.ts`): with `encoding_format:
 * "base64"` each vector is the base64 of its little-endian float32 bytes, otherwise an array of
 * numbers. The backend was asked for floats; a backend that sent base64 anyway is decoded.
 * `object`, `index` and `usage.total_tokens` are filled in where a backend left them out; usage
 * keeps OpenAI's two fields.
 */
import { IopError } from '@iop/core';
import { isObject } from '../shared/fields.js';
import type { EncodingFormat } from './embeddings-request.js';

/** A float vector as base64 of little-endian float32 bytes. */
export function encodeFloat32Base64(vector: readonly number[]): string {
  const bytes = Buffer.allocUnsafe(vector.length * 4);
  vector.forEach((value, index) => bytes.writeFloatLE(value, index * 4));
  return bytes.toString('base64');
}

/** The inverse of `encodeFloat32Base64`. @throws RangeError when the bytes are not whole float32 values. */
export function decodeFloat32Base64(text: string): number[] {
  const bytes = Buffer.from(text, 'base64');
  if (bytes.length % 4 !== 0) throw new RangeError('base64 embedding is not a whole number of float32 values');
  const vector: number[] = [];
  for (let offset = 0; offset < bytes.length; offset += 4) vector.push(bytes.readFloatLE(offset));
  return vector;
}

function malformed(detail: string): IopError {
  return new IopError('upstream_error', `upstream failure: the backend sent a malformed embeddings answer (${detail})`);
}

/**
 * Re-encodes a backend's embeddings answer (JSON bytes) for the client.
 * @throws IopError `upstream_error` when the answer is not an embeddings list.
 */
export function encodeEmbeddingsAnswer(body: Buffer, format: EncodingFormat): Buffer {
  let answer: unknown;
  try {
    answer = JSON.parse(body.toString('utf8'));
  } catch {
    throw malformed('not JSON');
  }
  if (!isObject(answer) || !Array.isArray(answer.data)) throw malformed('no data array');
  const data = answer.data.map((entry: unknown, position) => {
    if (!isObject(entry)) throw malformed(`data.${position} is not an object`);
    let vector = entry.embedding;
    if (typeof vector === 'string') {
      try {
        vector = decodeFloat32Base64(vector);
      } catch {
        throw malformed(`data.${position}.embedding is not float32 base64`);
      }
    }
    if (!Array.isArray(vector) || !vector.every((value) => typeof value === 'number'))
      throw malformed(`data.${position}.embedding is not a vector`);
    const index = typeof entry.index === 'number' ? entry.index : position;
    return {
      object: 'embedding',
      index,
      embedding: format === 'base64' ? encodeFloat32Base64(vector as number[]) : vector,
    };
  });
  const usage = isObject(answer.usage) ? answer.usage : {};
  const promptTokens = typeof usage.prompt_tokens === 'number' ? usage.prompt_tokens : 0;
  const totalTokens = typeof usage.total_tokens === 'number' ? usage.total_tokens : promptTokens;
  // OpenAI's usage has these two fields only (vLLM adds `completion_tokens: 0`).
  return Buffer.from(
    JSON.stringify({
      ...answer,
      object: 'list',
      data,
      usage: { prompt_tokens: promptTokens, total_tokens: totalTokens },
    }),
  );
}
