/** `GET /v1/models` in Anthropic's list shape (Models API › List Models), for clients that send `anthropic-version`. */
import type { ModelListing } from '@iop/core';

/** One entry of Anthropic's model list. */
export interface AnthropicModel {
  type: 'model';
  id: string;
  display_name: string;
  /** RFC 3339; the Unix epoch: iop does not know when a backend's model was made. */
  created_at: string;
}

/** `{ data, has_more, first_id, last_id }`: one page, nothing more to fetch. */
export function anthropicModelList(models: readonly ModelListing[]): {
  data: AnthropicModel[];
  has_more: false;
  first_id: string | null;
  last_id: string | null;
} {
  const data = models.map((model): AnthropicModel => ({
    type: 'model',
    id: model.id,
    display_name: model.id,
    created_at: new Date(model.created * 1000).toISOString(),
  }));
  return { data, has_more: false, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null };
}
