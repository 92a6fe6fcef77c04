/**
 * `POST /v1/rerank` (also `/rerank`, `/v2/rerank`) and `POST /v1/score` (also `/score`), as vLLM's
 * score servers answer them (docs/protocols.md "Rerank and score"). The score of a pair is
 * deterministic and means something: the share of the query's distinct words found in the
 * document, squeezed into (0, 1) with a small seeded jitter that breaks ties, so a document
 * that contains the query's words ranks above one that does not. Rerank results are sorted by
 * score descending and cut to `top_n`, each with `document: {text}`; score answers pair `text_1`
 * and `text_2` 1:1, 1:N or N:N. Usage: the tokens of every pair (query + document). Latency:
 * `ttft-ms`; the faults of aux-exchange.ts.
 */
import { answerJsonLater, beginAux, hashText, objectBody, servedModel } from './aux-exchange.js';
import type { SimContext } from './chat-handler.js';
import type { Exchange } from './exchange.js';
import { SimInputError } from './sim-error.js';
import { countTokens } from './tokenizer.js';

function words(text: string): Set<string> {
  return new Set(text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []);
}

/** The sim's relevance of `document` to `query`, in (0, 1). */
export function simScore(query: string, document: string): number {
  const wanted = words(query);
  const found = words(document);
  let shared = 0;
  for (const word of wanted) if (found.has(word)) shared++;
  const overlap = wanted.size === 0 ? 0 : shared / wanted.size;
  const jitter = (hashText(`${query}\u0000${document}`) % 1000) / 100_000; // < 0.01
  return 0.02 + 0.96 * overlap + jitter;
}

function readTexts(value: unknown, param: string): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value) && value.length > 0 && value.every((entry) => typeof entry === 'string'))
    return value as string[];
  throw new SimInputError(`${param} must be a string or a non-empty array of strings`, { param });
}

function documentText(value: unknown, index: number): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'object' && value !== null && typeof (value as { text?: unknown }).text === 'string')
    return (value as { text: string }).text;
  throw new SimInputError(`documents.${index} must be a string or {text}`, { param: `documents.${index}` });
}

export function handleRerank(context: SimContext, exchange: Exchange, raw: unknown): void {
  const body = objectBody(raw);
  const served = servedModel(context, exchange, body);
  if (served === undefined) return;
  if (typeof body.query !== 'string' || body.query === '')
    throw new SimInputError('query must be a non-empty string', { param: 'query' });
  if (!Array.isArray(body.documents) || body.documents.length === 0)
    throw new SimInputError('documents must be a non-empty array', { param: 'documents' });
  const query = body.query;
  const documents = body.documents.map(documentText);
  const topN = body.top_n ?? 0;
  if (!Number.isInteger(topN) || (topN as number) < 0)
    throw new SimInputError('top_n must be a non-negative integer', { param: 'top_n' });
  const pairTokens = documents.map((text) => countTokens(query) + countTokens(text));
  const request = beginAux(context, exchange, served.suffixKnobs, Math.max(...pairTokens));
  if (request === undefined) return;
  const results = documents
    .map((text, index) => ({ index, document: { text }, relevance_score: simScore(query, text) }))
    .sort((a, b) => b.relevance_score - a.relevance_score || a.index - b.index);
  const promptTokens = pairTokens.reduce((sum, count) => sum + count, 0);
  exchange.record.output = { finishReason: 'stop', promptTokens, completionTokens: 0, toolCalls: [] };
  const answer = JSON.stringify({
    id: `rerank-${exchange.record.id}`,
    model: served.model,
    usage: { prompt_tokens: promptTokens, total_tokens: promptTokens },
    results: topN === 0 ? results : results.slice(0, topN as number),
  });
  answerJsonLater(exchange, answer, request.knobs.ttftMs * context.timeScale, request.midStream);
}

export function handleScore(context: SimContext, exchange: Exchange, raw: unknown): void {
  const body = objectBody(raw);
  const served = servedModel(context, exchange, body);
  if (served === undefined) return;
  const first = readTexts(body.text_1, 'text_1');
  const second = readTexts(body.text_2, 'text_2');
  if (first.length > 1 && first.length !== second.length)
    throw new SimInputError('text_1 and text_2 must have the same length', { param: 'text_2' });
  const pairs = second.map((text, index) => [first.length === 1 ? first[0]! : first[index]!, text] as const);
  const pairTokens = pairs.map(([a, b]) => countTokens(a) + countTokens(b));
  const request = beginAux(context, exchange, served.suffixKnobs, Math.max(...pairTokens));
  if (request === undefined) return;
  const promptTokens = pairTokens.reduce((sum, count) => sum + count, 0);
  exchange.record.output = { finishReason: 'stop', promptTokens, completionTokens: 0, toolCalls: [] };
  const answer = JSON.stringify({
    id: `score-${exchange.record.id}`,
    object: 'list',
    created: Math.floor(Date.now() / 1000),
    model: served.model,
    data: pairs.map(([a, b], index) => ({ index, object: 'score', score: simScore(a, b) })),
    usage: { prompt_tokens: promptTokens, total_tokens: promptTokens },
  });
  answerJsonLater(exchange, answer, request.knobs.ttftMs * context.timeScale, request.midStream);
}
