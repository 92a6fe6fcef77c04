/**
 * A dialect's `count-tokens` endpoint (Anthropic `POST /v1/messages/count_tokens`, docs/protocols.md "Token counting":
 * `{input_tokens}`; Gemini `:countTokens`: `{totalTokens}`): the prompt tokens of a request without running it, decoded
 * and encoded by the dialect's `countTokens`. Exact when a provider of the model can tokenize (vLLM's `/tokenize` with
 * the chat template applied, the embedded llama.cpp tokenizer): the request is rendered as the chat body the backend
 * would get and tokenized there. Otherwise a documented estimate. The `x-iop-token-count` header says which (`exact` |
 * `estimate`).
 */
import type { NextFunction, Request, Response } from 'express';
import type { EdgeContext } from '../edge-context.js';
import { IopError, type Dialect } from '@iop/core';
import { estimateRequestTokens, toBackendChatRequest, TOKEN_COUNT_HEADER } from '../dialects.js';
import { parseJsonObject } from '../http/json-body.js';
import { locals } from '../http/request-context.js';
import { openRun } from '../attempt/open-run.js';
import { FrameKind } from '../tunnel/run-registry.js';

async function tokenizeOnProvider(
  edge: EdgeContext,
  requestId: string,
  model: string,
  payload: Record<string, unknown>,
  log: ReturnType<typeof locals>['log'],
): Promise<number | undefined> {
  const { run, first } = await openRun(
    edge.pool,
    {
      requestId,
      model,
      method: 'POST',
      path: '/tokenize',
      bodyFor: (served) => Buffer.from(JSON.stringify({ ...payload, model: served })),
      acceptedTimeoutMs: edge.config.runAcceptedTimeoutMs,
      firstByteTimeoutMs: edge.config.firstByteTimeoutMs,
      maxAttempts: 1,
    },
    log,
    () => undefined,
  );
  const parts: Uint8Array[] = [];
  if (first?.kind === FrameKind.BODY) parts.push(first.body);
  for await (const frame of run.frames) if (frame.kind === FrameKind.BODY) parts.push(frame.body);
  const body = JSON.parse(Buffer.concat(parts).toString('utf8')) as { count?: unknown; tokens?: unknown[] };
  if (typeof body.count === 'number') return body.count;
  return Array.isArray(body.tokens) ? body.tokens.length : undefined;
}

export function countTokensHandler(edge: EdgeContext, dialect: Dialect) {
  const codec = dialect.countTokens;
  return async function countTokens(req: Request, res: Response, next: NextFunction): Promise<void> {
    const { requestId, log, target } = locals(res);
    try {
      if (codec === undefined || target === undefined)
        throw new IopError('internal', `${dialect.name} declares a count-tokens endpoint without a codec`);
      const request = codec.decode(parseJsonObject(req.body), target);
      const group = edge.pool.resolve(request.model);
      if (edge.pool.candidates(group).size === 0) throw edge.pool.noProviderError(request.model);
      let count: number | undefined;
      if (
        group.targets.some((target) =>
          edge.registry.forModel(target.model).some((session) => session.capabilities.has('tokenize')),
        )
      ) {
        const chat = toBackendChatRequest({ ...request, stream: false }, { model: request.model, stream: false }).body;
        try {
          count = await tokenizeOnProvider(
            edge,
            requestId,
            request.model,
            {
              model: request.model,
              messages: chat.messages,
              ...(chat.tools === undefined ? {} : { tools: chat.tools }),
            },
            log,
          );
        } catch (error) {
          log.warn({ err: error }, 'tokenize on the provider failed; answering with an estimate');
        }
      }
      res.setHeader(TOKEN_COUNT_HEADER, count === undefined ? 'estimate' : 'exact');
      res.json(codec.encode(count ?? estimateRequestTokens(request)));
    } catch (error) {
      next(error);
    }
  };
}
