/**
 * `GET /v1beta/models` and `GET /v1beta/models/{model}` in Google's shape
 * (https://ai.google.dev/api/models; docs/protocols.md "Gemini models.list"): `{models: Model[],
 * nextPageToken?}` paged by `pageSize` (default 50, at most 1000) and `pageToken` (the opaque
 * offset iop handed out), `name` with the `models/` prefix the SDK requires.
 */
import type { ModelListing } from '@iop/core';
import { invalidRequest } from '@iop/core';
import type { GeminiModel, ListModelsResponse } from './wire-types.js';

const DEFAULT_PAGE = 50;
const MAX_PAGE = 1000;
const METHODS = ['generateContent', 'streamGenerateContent', 'countTokens'];

function toModel(model: ModelListing): GeminiModel {
  const out: GeminiModel = {
    name: `models/${model.id}`,
    baseModelId: model.id,
    version: '001',
    displayName: model.id,
    description: `${model.id}, served by iop`,
    supportedGenerationMethods: METHODS,
  };
  if (model.contextLength !== null) out.inputTokenLimit = model.contextLength;
  return out;
}

/** @throws IopError 400 for a `pageSize` or `pageToken` that is not a non-negative integer. */
export function geminiModelList(models: readonly ModelListing[], query: URLSearchParams): ListModelsResponse {
  const size = query.get('pageSize');
  const token = query.get('pageToken');
  const pageSize = size === null || size === '' ? DEFAULT_PAGE : Number(size);
  const offset = token === null || token === '' ? 0 : Number(token);
  if (!Number.isInteger(pageSize) || pageSize < 0)
    throw invalidRequest(
      `Invalid value at 'pageSize': expected a non-negative integer, got ${JSON.stringify(size)}`,
      'pageSize',
    );
  if (!Number.isInteger(offset) || offset < 0)
    throw invalidRequest(`Invalid value at 'pageToken': not a page token this server issued`, 'pageToken');
  const end = offset + Math.min(pageSize === 0 ? DEFAULT_PAGE : pageSize, MAX_PAGE);
  const page: ListModelsResponse = { models: models.slice(offset, end).map(toModel) };
  if (end < models.length) page.nextPageToken = String(end);
  return page;
}

/** One model by id (with or without `models/`), or undefined when it is not listed. */
export function geminiModelInfo(models: readonly ModelListing[], id: string): GeminiModel | undefined {
  const name = id.startsWith('models/') ? id.slice('models/'.length) : id;
  const found = models.find((model) => model.id === name);
  return found === undefined ? undefined : toModel(found);
}
