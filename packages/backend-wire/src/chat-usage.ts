/**
 * The backend's `usage` object (OpenAI Chat answers and chunks; docs/protocols.md "Chat response", "Usage") read into
 * the hub's `Usage`. The one reader of it: the normalized decoder, the passthrough guard's billing fallback and the
 * agent's usage scan all come here.
 *
 * Field mapping: `prompt_tokens` → `inputTokens`, `completion_tokens` → `outputTokens`,
 * `prompt_tokens_details.cached_tokens` → `cachedInputTokens`, `prompt_tokens_details.cache_write_tokens` →
 * `cacheWriteTokens`, `completion_tokens_details.reasoning_tokens` → `reasoningTokens`. A count the backend did not
 * send (absent, null, negative, not a finite number) stays `undefined` — not reported — and never becomes 0; a count
 * it sent as 0 is 0. Counts are whole tokens (a fraction is floored).
 */
import type { Usage } from '@iop/core';

function count(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? Math.floor(value) : undefined;
}

function detail(details: unknown, key: string): unknown {
  return typeof details === 'object' && details !== null ? (details as Record<string, unknown>)[key] : undefined;
}

/** Reads a parsed `usage` value; undefined when it is not an object. Fields not reported stay absent. */
export function chatUsageOf(value: unknown): Usage | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const record = value as Record<string, unknown>;
  const usage: Usage = {};
  const input = count(record.prompt_tokens);
  if (input !== undefined) usage.inputTokens = input;
  const output = count(record.completion_tokens);
  if (output !== undefined) usage.outputTokens = output;
  const cached = count(detail(record.prompt_tokens_details, 'cached_tokens'));
  if (cached !== undefined) usage.cachedInputTokens = cached;
  const written = count(detail(record.prompt_tokens_details, 'cache_write_tokens'));
  if (written !== undefined) usage.cacheWriteTokens = written;
  const reasoning = count(detail(record.completion_tokens_details, 'reasoning_tokens'));
  if (reasoning !== undefined) usage.reasoningTokens = reasoning;
  return usage;
}

/** Reads `usage` from the JSON text of a Chat answer or chunk; undefined when absent, not an object, or not JSON. */
export function chatUsageOfJson(text: string): Usage | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  return chatUsageOf((value as { usage?: unknown }).usage);
}
