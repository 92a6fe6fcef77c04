/**
 * The pool's "overloaded" answer (admission queue full or wait over) in the client's dialect:
 * OpenAI Chat and Responses clients get 429 `rate_limit_error` with `Retry-After` (what the
 * OpenAI SDKs back off on); Anthropic clients get 529 `overloaded_error` (Anthropic's own status
 * for an overloaded API, docs/protocols.md "Messages errors") — code `no_capacity`, which the Anthropic dialect renders
 * as 529. An upstream's own 429 stays `rate_limited` in every dialect.
 */
import { IopError, type DialectName } from '@iop/core';
import { PoolOverloadedError } from '../pool/provider-pool.js';

export function overloadFor(error: unknown, dialect: DialectName): unknown {
  if (!(error instanceof PoolOverloadedError) || dialect !== 'anthropic-messages') return error;
  return new IopError('no_capacity', error.message, error.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: error.retryAfterSeconds });
}
