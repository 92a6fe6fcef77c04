/**
 * vLLM's small routes: `GET /v1/models` and `POST /tokenize`.
 */
import type { SimContext } from './chat-handler.js';
import { sendError, sendJson, type Exchange } from './exchange.js';
import { parseModelName } from './model-name.js';
import { SimInputError } from './sim-error.js';
import { contentText, splitTokens, tokenId } from './tokenizer.js';

/** `GET /v1/models` body, serialized once at start: vLLM's model cards with `max_model_len`. */
export function modelsBody(models: readonly string[], maxModelLen: number): string {
  const created = Math.floor(Date.now() / 1000);
  return JSON.stringify({
    object: 'list',
    data: models.map((id) => ({
      id,
      object: 'model',
      created,
      owned_by: 'iop-sim',
      root: id,
      parent: null,
      max_model_len: maxModelLen,
    })),
  });
}

/**
 * `POST /tokenize` `{model?, prompt}` or `{model?, messages}` (vLLM) →
 * `{count, max_model_len, tokens, token_strs?}`; `token_strs` when `return_token_strs` is true.
 * Messages are tokenized as the concatenation of their texts (no chat template).
 * @throws SimInputError (400) without `prompt` or `messages`.
 */
export function handleTokenize(context: SimContext, exchange: Exchange, body: unknown): void {
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw new SimInputError('request body must be a JSON object');
  const fields = body as { model?: unknown; prompt?: unknown; messages?: unknown; return_token_strs?: unknown };
  if (fields.model !== undefined) {
    if (typeof fields.model !== 'string') throw new SimInputError("'model' must be a string", { param: 'model' });
    exchange.record.model = fields.model;
    if (!context.models.has(parseModelName(fields.model).base)) {
      sendError(exchange, 404, `The model \`${fields.model}\` does not exist.`);
      return;
    }
  }
  // Messages are tokenized as the KV-cache model tokenizes a chat prompt (tokenizer.ts promptTokenIds).
  let strings: string[];
  if (typeof fields.prompt === 'string') strings = splitTokens(fields.prompt);
  else if (Array.isArray(fields.messages)) {
    strings = [];
    for (const message of fields.messages as unknown[]) {
      for (const token of splitTokens(contentText((message as { content?: unknown } | null)?.content)))
        strings.push(token);
    }
  } else throw new SimInputError("either 'prompt' (string) or 'messages' (array) is required", { param: 'prompt' });
  const response: Record<string, unknown> = {
    count: strings.length,
    max_model_len: context.defaults.maxModelLen,
    tokens: strings.map(tokenId),
  };
  if (fields.return_token_strs === true) response.token_strs = strings;
  sendJson(exchange, 200, JSON.stringify(response));
}
