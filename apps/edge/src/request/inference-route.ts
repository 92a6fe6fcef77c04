/**
 * What an inference endpoint hands the one pipeline (request/inference.ts): its dialect, whether
 * its answers may be relayed as the backend's bytes, and the hooks of stateful dialects; and what
 * the pipeline hands the path it takes (`RequestScope`: passthrough-path.ts, normalized-path.ts).
 */
import type { Request, Response } from 'express';
import type { Dialect, InferenceRequest } from '@iop/core';
import type { GateOverrides } from '@iop/stream-gate';
import type { EdgeContext } from '../edge-context.js';
import type { PassthroughApi } from '../passthrough/passthrough-api.js';
import type { RequestLocals } from '../http/request-context.js';
import type { RequestOutcome } from './request-outcome.js';

export interface InferenceRoute {
  dialect: Dialect;
  /** The client's dialect is the backend's (OpenAI Chat): relay bytes unless a gate filter needs the content. */
  passthrough: boolean;
  /**
   * A JSON API always relayed as it is, never through the gate (embeddings, completions, rerank, score:
   * passthrough/).
   */
  relayed?: PassthroughApi;
  /**
   * Stateful dialects (Responses): adjust the decoded request before dispatch (e.g. prepend stored history); `context`
   * carries the request's owner.
   */
  prepare?: (
    request: InferenceRequest,
    body: Record<string, unknown>,
    context: RequestLocals,
  ) => Promise<InferenceRequest> | InferenceRequest;
  /** Receives the final response object of a normalized answer (e.g. to store it for `context.owner`). */
  onResult?: (
    result: unknown,
    request: InferenceRequest,
    body: Record<string, unknown>,
    context: RequestLocals,
  ) => void | Promise<void>;
}

/** One request as the pipeline hands it to the path it takes. */
export interface RequestScope {
  route: InferenceRoute;
  edge: EdgeContext;
  req: Request;
  res: Response;
  context: RequestLocals;
  /** The parsed JSON body. */
  body: Record<string, unknown>;
  /** The request's outcome: its facts, stop signal, runs and usage (request-outcome.ts). */
  outcome: RequestOutcome;
  /** The request span records (a non-stream relayed answer is then read for its finish reasons). */
  spanRecording: boolean;
  /** The `x-iop-gate` header's overrides, when sent. */
  overrides: GateOverrides | undefined;
}
