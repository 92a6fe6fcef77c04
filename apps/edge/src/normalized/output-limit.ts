/**
 * The output reservation (`max_tokens`) against the backend's context window. Claude Code asks for
 * `max_tokens: 32000` by default (docs/protocols.md "Claude Code"); on a 32k-context model prompt + reservation cannot
 * fit, and the backend's 400 reaches Claude Code as "Prompt is too long" although the prompt fits.
 * So a reservation larger than what the context leaves after the prompt is lowered to what fits,
 * with a warning for `x-iop-warnings` and a log line that names the reservation as the cause.
 *
 * The prompt is estimated (`estimateRequestTokens`, the count_tokens estimate) with a 10 % margin;
 * a prompt that alone fills the context is left for the backend to reject.
 */
import type { InferenceRequest } from '@iop/core';
import type { Logger } from '../logger.js';
import { estimateRequestTokens } from '../dialects.js';

/** Share of the estimated prompt added as a margin for the estimate's error. */
const PROMPT_MARGIN = 0.1;

export interface FittedRequest {
  request: InferenceRequest;
  /** Set when the reservation was lowered. */
  warning?: string;
}

/** @param contextLength the served model's context window, tokens (0 = unknown: nothing changes). */
export function fitOutputLimit(request: InferenceRequest, contextLength: number, log: Logger): FittedRequest {
  const limit = request.maxOutputTokens;
  if (limit === undefined || contextLength === 0) return { request };
  const prompt = Math.ceil(estimateRequestTokens(request) * (1 + PROMPT_MARGIN));
  if (prompt + limit <= contextLength) return { request };
  const fits = contextLength - prompt;
  if (fits < 1) return { request };
  log.warn(
    { maxOutputTokens: limit, loweredTo: fits, contextLength, estimatedPromptTokens: prompt },
    'the output reservation (max_tokens) is larger than the context leaves after the prompt; lowered to fit (the prompt itself fits)',
  );
  return {
    request: { ...request, maxOutputTokens: fits },
    warning: `max_tokens ${limit} lowered to ${fits}: the model's context holds ${contextLength} tokens and the prompt takes about ${prompt}`,
  };
}
