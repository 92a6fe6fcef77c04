/**
 * The price table (`pricing` in the edge config) and what a request costs. Prices are US dollars
 * per million tokens, per model: `input` (prompt tokens), `cachedInput` (prompt tokens the backend
 * reports as served from its prefix cache: OpenAI's `usage.prompt_tokens_details.cached_tokens`,
 * which vLLM sends with `--enable-prompt-tokens-details`; default the `input` price) and `output`
 * (completion tokens, reasoning included).
 *
 * A request's price is the first entry of `pricing.models` named, in order, by the model the
 * client asked for (a group name, an alias or a served name, as the client spelled it), its
 * group's name, or the served model that answered (its backend id, e.g. `Qwen/Qwen3-8B`): so one
 * entry per group prices its aliases too, and an alias may carry a price of its own. A model
 * without an entry costs 0.
 *
 *   cost_usd = ((input - cached) × input + cached × cachedInput + output × output) / 1 000 000
 *
 * (`cached` is a part of `input`, as in OpenAI's usage). The cost is computed once per request, where
 * its usage is settled (request/request-outcome.ts), from the usage it is billed — every attempt's, the
 * edge's estimate for a stream that ended without the backend's usage — and stored in its ledger
 * row; money budgets count the same figure (limits/key-limiter.ts).
 */
import { Type } from '@sinclair/typebox';
import type { Usage } from '@iop/core';

/** One model's prices, USD per million tokens. */
export interface ModelPrice {
  input: number;
  /** Prompt tokens the backend served from its cache; default `input`. */
  cachedInput?: number;
  output: number;
}

export interface PricingConfig {
  /** Prices by model name: a client-facing name (group or alias), or a served model id. */
  models: Record<string, ModelPrice>;
}

const usdPerMillion = (description: string) =>
  Type.Number({ minimum: 0, maximum: 1_000_000, description: `${description}, USD per million tokens.` });

export const MODEL_PRICE_SCHEMA = Type.Object(
  {
    input: usdPerMillion('Prompt tokens'),
    cachedInput: Type.Optional(
      usdPerMillion(
        'Prompt tokens the backend reports as cached (prompt_tokens_details.cached_tokens); default the input price',
      ),
    ),
    output: usdPerMillion('Completion tokens (reasoning included)'),
  },
  { additionalProperties: false },
);

export const PRICING_SCHEMA = Type.Object(
  {
    models: Type.Record(Type.String({ minLength: 1 }), MODEL_PRICE_SCHEMA, {
      default: {},
      description:
        'Prices by model: the name the client sends, else its group name, else the served model id; a model without an entry costs 0. Reloadable.',
    }),
  },
  {
    additionalProperties: false,
    default: {},
    description:
      'Price table of the usage ledger (cost_usd) and money budgets (keys budget.maxCostUsd), US dollars per million tokens.',
  },
);

/** The price of the first of `names` with an entry (undefined names skipped), or undefined. */
export function priceOf(pricing: PricingConfig, names: ReadonlyArray<string | undefined>): ModelPrice | undefined {
  for (const name of names) if (name !== undefined && Object.hasOwn(pricing.models, name)) return pricing.models[name];
  return undefined;
}

/** What `usage` costs at `price`, USD (0 without a price or usage). Cached tokens are a part of the input tokens. */
export function costOf(price: ModelPrice | undefined, usage: Usage | undefined): number {
  if (price === undefined || usage === undefined) return 0;
  const input = usage.inputTokens ?? 0;
  const cached = Math.min(input, usage.cachedInputTokens ?? 0);
  const perMillion =
    (input - cached) * price.input +
    cached * (price.cachedInput ?? price.input) +
    (usage.outputTokens ?? 0) * price.output;
  return perMillion / 1_000_000;
}

/**
 * Money is counted (budgets, shared counters) in integer units of 10⁻⁹ USD: a token at $0.01 per million is 10 units.
 */
export const NANO_USD_PER_USD = 1_000_000_000;

/** `usd` in counter units (rounded to the nearest nano-dollar). */
export function nanoUsd(usd: number): number {
  return Math.round(usd * NANO_USD_PER_USD);
}
