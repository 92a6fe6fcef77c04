/**
 * The endpoints of the JSON APIs relayed as they are (embeddings, legacy completions, rerank,
 * score), served by the one inference pipeline (`request/inference.ts`, its passthrough path) and
 * added to the dialect registry's route table by `routes.ts` (the key check guards each path's
 * root like every dialect's). Errors are OpenAI's envelope (`chatDialect`'s rendering); each API
 * has its own name in metrics, logs and the usage ledger.
 *
 * - `POST /v1/embeddings`, `POST /v1/completions`, `POST /v1/rerank`, `POST /v1/score`;
 * - vLLM's aliases `POST /rerank`, `/v2/rerank` (Cohere v2 clients) and `/score`.
 */
import type { Dialect, DialectEndpoint } from '@iop/core';
import { chatDialect } from '../dialects.js';
import type { InferenceRoute } from './inference-route.js';
import {
  completionsPassthrough,
  embeddingsPassthrough,
  rerankPassthrough,
  scorePassthrough,
} from '../passthrough/auxiliary.js';
import type { PassthroughApi } from '../passthrough/passthrough-api.js';

/**
 * OpenAI's envelope and rate-limit headers under the API's own name; its endpoints are listed here, not by the dialect.
 */
function dialectNamed(name: string): Dialect {
  return { ...chatDialect, name, endpoints: [], pathPrefixes: [] };
}

function route(name: string, api: PassthroughApi): InferenceRoute {
  return { dialect: dialectNamed(name), passthrough: true, relayed: api };
}

const embeddings = route('openai-embeddings', embeddingsPassthrough);
const completions = route('openai-completions', completionsPassthrough);
const rerank = route('rerank', rerankPassthrough);
const score = route('score', scorePassthrough);

/** Each endpoint with the route that serves it. */
export const PASSTHROUGH_API_ENDPOINTS: ReadonlyArray<{ endpoint: DialectEndpoint; route: InferenceRoute }> = [
  ['/v1/embeddings', embeddings],
  ['/v1/completions', completions],
  ['/v1/rerank', rerank],
  ['/rerank', rerank],
  ['/v2/rerank', rerank],
  ['/v1/score', score],
  ['/score', score],
].map(([path, served]) => ({
  endpoint: { method: 'POST', path: path as string, role: 'inference' },
  route: served as InferenceRoute,
}));
