/**
 * A request's admission before its run: the key's allowed models (403 `permission`), its limits
 * and budget (429, limits/key-limiter.ts) are checked and the dialect's rate-limit headers set
 * (`Dialect.rateLimitHeaders`). What the request is then billed — its cost, its tokens counted
 * against the limits (`Admission.finish`), its ledger row — is settled once at its end by
 * request-outcome.ts. A no-op without shared state (bare contexts) or without a key record.
 */
import type { Response } from 'express';
import { IopError, type Dialect } from '@iop/core';
import type { EdgeContext } from '../edge-context.js';
import { modelAllowed } from '../keys/api-key.js';
import { LimitRefusal, type Admission } from '../limits/key-limiter.js';
import type { KeyIdentity } from '../keys/key-directory.js';

/**
 * @returns the limiter's admission (to `finish` at the request's end), undefined when no limit applies.
 * @throws IopError `permission` (403) for a model the key may not use, `LimitRefusal` (429) when a
 * limit or the budget is reached, `no_capacity` (503) when the shared counters fail closed.
 */
export async function admitRequest(
  edge: EdgeContext,
  res: Response,
  dialect: Dialect,
  identity: KeyIdentity,
  model: string,
): Promise<Admission | undefined> {
  const state = edge.state;
  const record = identity.record;
  if (state === undefined || record === undefined) return undefined;
  if (!modelAllowed(record, [model, edge.knownModel(model)]))
    throw new IopError('permission', `this API key may not use the model ${JSON.stringify(model)}`);
  const setHeader = (name: string, value: string) => {
    if (!res.headersSent) res.setHeader(name, value);
  };
  try {
    const admission = await state.limiter.admit(record);
    dialect.rateLimitHeaders(admission.state, Date.now(), setHeader);
    return admission;
  } catch (error) {
    if (error instanceof LimitRefusal) dialect.rateLimitHeaders(error.state, Date.now(), setHeader);
    throw error;
  }
}
