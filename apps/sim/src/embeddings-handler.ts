/**
 * `POST /v1/embeddings` (vLLM's pooling server, OpenAI's shape): one deterministic unit vector per
 * input, seeded by the input's text (or token ids), so the same input always gets the same
 * vector and different inputs different ones. `dimensions` sets the length (default
 * `DEFAULT_DIMENSIONS`, at most `MAX_DIMENSIONS`); `encoding_format: "base64"` gives the
 * little-endian float32 bytes in base64. Usage: the inputs' tokens (the sim's tokenizer; a token
 * array counts its length). Latency: `ttft-ms` before the answer; the faults of aux-exchange.ts.
 */
import { answerJsonLater, beginAux, hashText, objectBody, servedModel } from './aux-exchange.js';
import type { SimContext } from './chat-handler.js';
import type { Exchange } from './exchange.js';
import { seededRandom } from './prng.js';
import { SimInputError } from './sim-error.js';
import { countTokens } from './tokenizer.js';

export const DEFAULT_DIMENSIONS = 256;
export const MAX_DIMENSIONS = 8192;

type Input = string | number[];

function isTokens(value: unknown): value is number[] {
  return (
    Array.isArray(value) &&
    value.length > 0 &&
    value.every((token) => Number.isInteger(token) && (token as number) >= 0)
  );
}

function readInputs(input: unknown): Input[] {
  if ((typeof input === 'string' && input !== '') || isTokens(input)) return [input];
  if (
    Array.isArray(input) &&
    input.length > 0 &&
    input.every((entry) => (typeof entry === 'string' && entry !== '') || isTokens(entry))
  )
    return input as Input[];
  throw new SimInputError('input must be a non-empty string, an array of them, or token ids', { param: 'input' });
}

/** The deterministic unit vector of `input`, `dimensions` long. */
export function simEmbedding(input: Input, dimensions: number): number[] {
  const random = seededRandom(hashText(typeof input === 'string' ? input : `tokens:${input.join(',')}`));
  const vector = Array.from({ length: dimensions }, () => random() * 2 - 1);
  const norm = Math.sqrt(vector.reduce((sum, value) => sum + value * value, 0));
  return vector.map((value) => value / norm);
}

function base64Of(vector: readonly number[]): string {
  const bytes = Buffer.allocUnsafe(vector.length * 4);
  vector.forEach((value, index) => bytes.writeFloatLE(value, index * 4));
  return bytes.toString('base64');
}

export function handleEmbeddings(context: SimContext, exchange: Exchange, raw: unknown): void {
  const body = objectBody(raw);
  const served = servedModel(context, exchange, body);
  if (served === undefined) return;
  const inputs = readInputs(body.input);
  const dimensions = body.dimensions ?? DEFAULT_DIMENSIONS;
  if (!Number.isInteger(dimensions) || (dimensions as number) < 1 || (dimensions as number) > MAX_DIMENSIONS)
    throw new SimInputError(`dimensions must be an integer in [1, ${MAX_DIMENSIONS}]`, { param: 'dimensions' });
  const format = body.encoding_format ?? 'float';
  if (format !== 'float' && format !== 'base64')
    throw new SimInputError("encoding_format must be 'float' or 'base64'", { param: 'encoding_format' });
  const tokens = inputs.map((input) => (typeof input === 'string' ? countTokens(input) : input.length));
  const promptTokens = tokens.reduce((sum, count) => sum + count, 0);
  const request = beginAux(context, exchange, served.suffixKnobs, Math.max(...tokens));
  if (request === undefined) return;
  const data = inputs.map((input, index) => {
    const vector = simEmbedding(input, dimensions as number);
    return { object: 'embedding', index, embedding: format === 'base64' ? base64Of(vector) : vector };
  });
  exchange.record.output = { finishReason: 'stop', promptTokens, completionTokens: 0, toolCalls: [] };
  const answer = JSON.stringify({
    id: `embd-${exchange.record.id}`,
    object: 'list',
    created: Math.floor(Date.now() / 1000),
    model: served.model,
    data,
    usage: { prompt_tokens: promptTokens, total_tokens: promptTokens, completion_tokens: 0 },
  });
  answerJsonLater(exchange, answer, request.knobs.ttftMs * context.timeScale, request.midStream);
}
