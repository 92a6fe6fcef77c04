/**
 * `GET /v1/models` in OpenAI's list shape (API reference "Models › List models"):
 * `{ object: "list", data: Model[] }`, with three fields beyond OpenAI's: `context_length` (tokens,
 * null when unknown), `providers` (providers able to serve the model now) and `apis` (the APIs
 * its providers serve it with: `chat`, `completions`, `embeddings`, `rerank`; null when none tells).
 */
import type { ModelListing } from '@iop/core';

export interface OpenAIModel {
  id: string;
  object: 'model';
  /** Unix seconds; 0: iop does not know when a backend's model was made. */
  created: number;
  owned_by: string;
  context_length: number | null;
  providers: number;
  apis: string[] | null;
}

export function openaiModelList(models: readonly ModelListing[]): { object: 'list'; data: OpenAIModel[] } {
  return {
    object: 'list',
    data: models.map((model) => ({
      id: model.id,
      object: 'model',
      created: model.created,
      owned_by: 'iop',
      context_length: model.contextLength,
      providers: model.providers,
      apis: model.apis ?? null,
    })),
  };
}
