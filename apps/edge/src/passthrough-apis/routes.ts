/**
 * The routes of the JSON APIs relayed as they are (embeddings, legacy completions, rerank, score),
 * registered with the one inference pipeline (`http/inference.ts`, its passthrough path). Errors
 * are OpenAI's envelope (`chatDialect`'s rendering); each API has its own name in metrics, logs
 * and the usage ledger (`DialectName`).
 *
 * - `POST /v1/embeddings`, `POST /v1/completions`, `POST /v1/rerank`, `POST /v1/score`;
 * - vLLM's aliases `POST /rerank`, `/v2/rerank` (Cohere v2 clients) and `/score`, outside `/v1`:
 *   mounted with the key check of their own (`mountAliases`).
 */
import type { Express } from 'express';
import type { Dialect, DialectName } from '@iop/core';
import { chatDialect } from '../dialects.js';
import type { EdgeContext } from '../edge-context.js';
import { inferenceHandler, type InferenceRoute } from '../http/inference.js';
import { rawBody } from '../http/json-body.js';
import { keyCheck } from '../http/key-check.js';
import { completionsPassthrough, embeddingsPassthrough, rerankPassthrough, scorePassthrough } from './auxiliary.js';
import type { PassthroughApi } from './passthrough-api.js';

/** OpenAI's error rendering under the API's own name. */
function dialectNamed(name: DialectName): Dialect {
  return { ...chatDialect, name };
}

function route(name: DialectName, api: PassthroughApi): InferenceRoute {
  return { dialect: dialectNamed(name), passthrough: true, relayed: api };
}

const embeddings = route('openai-embeddings', embeddingsPassthrough);
const completions = route('openai-completions', completionsPassthrough);
const rerank = route('rerank', rerankPassthrough);
const score = route('score', scorePassthrough);

/** The `/v1` routes, by path (the fast path serves them too). */
export const passthroughApiRoutes: Record<string, InferenceRoute> = {
  '/v1/embeddings': embeddings,
  '/v1/completions': completions,
  '/v1/rerank': rerank,
  '/v1/score': score,
};

/** vLLM's rerank and score paths outside `/v1`, with the key check `/v1` has from the app. */
export function mountAliases(app: Express, edge: EdgeContext): void {
  const body = rawBody(edge.config.maxBodyBytes);
  const check = keyCheck(edge);
  for (const [path, served] of [
    ['/rerank', rerank],
    ['/v2/rerank', rerank],
    ['/score', score],
  ] as const)
    app.post(path, check, body, inferenceHandler(served, edge));
}
