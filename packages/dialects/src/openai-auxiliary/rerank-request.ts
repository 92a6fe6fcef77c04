/**
 * Validates `POST /v1/rerank` (Jina/Cohere style, as vLLM serves it: docs/protocols.md "Rerank
 * and score") and `POST /v1/score` (vLLM), and puts a rerank answer in its documented order.
 *
 * Rerank: `model`; `query` a non-empty string; `documents` 1–10 000 strings or `{text}` objects
 * (sent to the backend as strings); `top_n` ≥ 0 (0 or absent: all); `return_documents` (default
 * true, as vLLM and Jina answer). Score: `model`; `text_1`, `text_2` each a non-empty string or
 * a non-empty array of strings, paired 1:1, 1:N or N:N (equal lengths).
 */
import { IopError, invalidRequest } from '@iop/core';
import { isAbsent, isObject, openaiFields as fields, typeName } from '../shared/fields.js';
import type { AuxiliaryRequest, RerankResult } from './wire-types.js';

export const MAX_RERANK_DOCUMENTS = 10_000;

export interface RerankRequest extends AuxiliaryRequest {
  documents: string[];
  topN: number | undefined;
  returnDocuments: boolean;
}

function readDocument(value: unknown, index: number): string {
  const param = `documents.${index}`;
  if (typeof value === 'string') return value;
  if (isObject(value) && typeof value.text === 'string') return value.text;
  throw invalidRequest(`${param} must be a string or an object with a text string, got ${typeName(value)}`, param);
}

/**
 * @throws IopError `invalid_request` (400) naming the field.
 */
export function readRerankRequest(body: unknown): RerankRequest {
  if (!isObject(body)) throw invalidRequest('the request body must be a JSON object');
  const model = fields.readString(body.model, 'model');
  const query = fields.readString(body.query, 'query');
  if (query === '') throw invalidRequest('query must not be empty', 'query');
  const list = fields.readArray(body.documents, 'documents');
  if (list.length === 0) throw invalidRequest('documents must not be empty', 'documents');
  if (list.length > MAX_RERANK_DOCUMENTS)
    throw invalidRequest(`documents must have at most ${MAX_RERANK_DOCUMENTS} entries`, 'documents');
  const documents = list.map(readDocument);
  const topN = fields.optionalInteger(body.top_n, 'top_n', { min: 0, max: MAX_RERANK_DOCUMENTS });
  const returnDocuments = fields.optionalBoolean(body.return_documents, 'return_documents') ?? true;
  const characters = query.length * documents.length + documents.reduce((sum, text) => sum + text.length, 0);
  return {
    model,
    stream: false,
    includeUsage: false,
    promptTokensEstimate: Math.ceil(characters / 4),
    backendFields: { documents },
    documents,
    topN: topN === 0 ? undefined : topN,
    returnDocuments,
  };
}

function readTexts(value: unknown, param: string): string[] {
  if (typeof value === 'string') {
    if (value === '') throw invalidRequest(`${param} must not be empty`, param);
    return [value];
  }
  if (!Array.isArray(value) || value.length === 0)
    throw invalidRequest(`${param} must be a string or a non-empty array of strings`, param);
  value.forEach((entry, index) => {
    if (typeof entry !== 'string')
      throw invalidRequest(`${param}.${index} must be a string, got ${typeName(entry)}`, `${param}.${index}`);
  });
  return value as string[];
}

/**
 * @throws IopError `invalid_request` (400) naming the field.
 */
export function readScoreRequest(body: unknown): AuxiliaryRequest & { pairs: number } {
  if (!isObject(body)) throw invalidRequest('the request body must be a JSON object');
  const model = fields.readString(body.model, 'model');
  if (isAbsent(body.text_1)) throw invalidRequest('text_1 is required', 'text_1');
  if (isAbsent(body.text_2)) throw invalidRequest('text_2 is required', 'text_2');
  const first = readTexts(body.text_1, 'text_1');
  const second = readTexts(body.text_2, 'text_2');
  if (first.length > 1 && first.length !== second.length)
    throw invalidRequest(
      `text_1 and text_2 must have the same length when text_1 is a list (got ${first.length} and ${second.length})`,
      'text_2',
    );
  const pairs = Math.max(first.length, second.length);
  const characters = (first.length === 1 ? first[0]!.length * pairs : first.join('').length) + second.join('').length;
  return {
    model,
    stream: false,
    includeUsage: false,
    promptTokensEstimate: Math.ceil(characters / 4),
    backendFields: {},
    pairs,
  };
}

/**
 * A backend's rerank answer as documented: results sorted by `relevance_score` descending (ties
 * by index), cut to `top_n`, each with `document: {text}` when `return_documents` (else
 * without). llama.cpp server answers in document order, ignores `top_n` and echoes no text.
 * @throws IopError `upstream_error` when the answer has no valid `results`.
 */
export function orderRerankAnswer(
  body: Buffer,
  request: Pick<RerankRequest, 'documents' | 'topN' | 'returnDocuments'>,
): Buffer {
  let answer: unknown;
  try {
    answer = JSON.parse(body.toString('utf8'));
  } catch {
    answer = undefined;
  }
  if (!isObject(answer) || !Array.isArray(answer.results))
    throw new IopError('upstream_error', 'upstream failure: the backend sent a malformed rerank answer');
  const results: RerankResult[] = answer.results.map((entry: unknown) => {
    if (
      !isObject(entry) ||
      typeof entry.index !== 'number' ||
      typeof entry.relevance_score !== 'number' ||
      request.documents[entry.index] === undefined
    )
      throw new IopError('upstream_error', 'upstream failure: the backend sent a malformed rerank result');
    const result: RerankResult = { index: entry.index, relevance_score: entry.relevance_score };
    if (request.returnDocuments) result.document = { text: request.documents[entry.index]! };
    return result;
  });
  results.sort((a, b) => b.relevance_score - a.relevance_score || a.index - b.index);
  const kept = request.topN === undefined ? results : results.slice(0, request.topN);
  return Buffer.from(JSON.stringify({ ...answer, results: kept }));
}
