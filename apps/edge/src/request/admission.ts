/**
 * A request's admission and accounting around its run: before the run, the key's allowed models
 * (403 `permission`), limits and budget (429, limits/key-limiter.ts) are checked and the dialect's
 * rate-limit headers set (`Dialect.rateLimitHeaders`); after it, `complete` settles the request:
 * its cost at the price table (ledger/pricing.ts, computed here once), its real tokens and cost
 * counted against the limits and budgets, and its usage-ledger row queued. Both are no-ops without
 * shared state (bare contexts).
 */
import type { Response } from 'express';
import { IopError, type Dialect, type Usage } from '@iop/core';
import type { EdgeContext } from '../edge-context.js';
import { modelAllowed } from '../keys/api-key.js';
import { costOf, priceOf } from '../ledger/pricing.js';
import { LimitRefusal, type Admission } from '../limits/key-limiter.js';
import { locals } from '../http/request-context.js';
import { OPEN_IDENTITY } from '../http/key-check.js';

export interface RunSummary {
  status: number;
  usage: Usage | undefined;
  /** The usage is the edge's estimate (a stream that ended without the backend's usage). */
  tokensEstimated?: boolean;
  servedModel?: string;
  agentId?: string;
  attempts: number;
  ttftMs?: number;
  durationMs: number;
}

export interface RequestAdmission {
  /** Call once when the request has ended (answer, error or client gone). */
  complete(summary: RunSummary): void;
}

const NOTHING: RequestAdmission = { complete: () => {} };

/**
 * @throws IopError `permission` (403) for a model the key may not use, `LimitRefusal` (429) when a
 * limit or the budget is reached, `no_capacity` (503) when the shared counters fail closed.
 */
export async function admitRequest(
  edge: EdgeContext,
  res: Response,
  dialect: Dialect,
  model: string,
): Promise<RequestAdmission> {
  const state = edge.state;
  if (state === undefined) return NOTHING;
  const context = locals(res);
  const identity = context.identity ?? OPEN_IDENTITY;
  const record = identity.record;
  const setHeader = (name: string, value: string) => {
    if (!res.headersSent) res.setHeader(name, value);
  };
  let admission: Admission | undefined;
  let refusal: number | undefined;
  if (record !== undefined) {
    if (!modelAllowed(record, [model, edge.knownModel(model)])) {
      refusal = 403;
    } else {
      try {
        admission = await state.limiter.admit(record);
        dialect.rateLimitHeaders(admission.state, Date.now(), setHeader);
      } catch (error) {
        if (error instanceof LimitRefusal) dialect.rateLimitHeaders(error.state, Date.now(), setHeader);
        ledgerRow(edge, res, dialect, model, identity.keyId, {
          status: error instanceof IopError ? error.status : 500,
          usage: undefined,
          attempts: 0,
          durationMs: performance.now() - context.startedAt,
        });
        throw error;
      }
    }
  }
  if (refusal !== undefined) {
    ledgerRow(edge, res, dialect, model, identity.keyId, {
      status: refusal,
      usage: undefined,
      attempts: 0,
      durationMs: performance.now() - context.startedAt,
    });
    throw new IopError('permission', `this API key may not use the model ${JSON.stringify(model)}`);
  }
  let done = false;
  return {
    complete(summary) {
      if (done) return;
      done = true;
      const tokens = (summary.usage?.inputTokens ?? 0) + (summary.usage?.outputTokens ?? 0);
      // Read per request: a reload may change the price table.
      const price = priceOf(edge.config.pricing, [model, edge.knownModel(model), summary.servedModel]);
      const costUsd = costOf(price, summary.usage);
      if (admission !== undefined) void admission.finish(tokens, costUsd);
      ledgerRow(edge, res, dialect, model, identity.keyId, summary, costUsd);
    },
  };
}

function ledgerRow(
  edge: EdgeContext,
  res: Response,
  dialect: Dialect,
  model: string,
  keyId: string,
  summary: RunSummary,
  costUsd = 0,
): void {
  const usage = summary.usage;
  edge.state?.ledger.record({
    tsMs: Date.now(),
    requestId: locals(res).requestId,
    keyId,
    requestedModel: model,
    ...(summary.servedModel === undefined ? {} : { servedModel: summary.servedModel }),
    ...(summary.agentId === undefined ? {} : { agentId: summary.agentId }),
    dialect: dialect.name,
    inputTokens: usage?.inputTokens ?? 0,
    outputTokens: usage?.outputTokens ?? 0,
    cachedTokens: usage?.cachedInputTokens ?? 0,
    reasoningTokens: usage?.reasoningTokens ?? 0,
    attempts: summary.attempts,
    ...(summary.tokensEstimated === true ? { tokensEstimated: true } : {}),
    ...(summary.ttftMs === undefined ? {} : { ttftMs: Math.round(summary.ttftMs * 10) / 10 }),
    durationMs: Math.round(summary.durationMs * 10) / 10,
    status: summary.status,
    costUsd,
  });
}
