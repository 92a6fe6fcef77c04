/**
 * The one inference pipeline, shared by every inference endpoint (chat completions, messages, responses, Gemini, the
 * JSON APIs relayed as they are): parse → (passthrough | gate) → run through the pool → relay bytes (path A,
 * passthrough-path.ts) or encode released events (path B, normalized-path.ts). Endpoints differ only by the route
 * they pass in (inference-route.ts): the dialect, whether passthrough is possible, hooks for stateful dialects.
 *
 * Who owns what: the request's outcome (request-outcome.ts) is created here, gathers the facts and settles the
 * request once on every exit — the answer, an error (rendered by the error handler in the client's dialect), the
 * client gone; its `RequestDeadline` is the request's one stop signal, its `RequestRuns` (attempt/request-runs.ts)
 * the one canceller of the request's backend runs.
 */
import type { NextFunction, Request, Response } from 'express';
import { otelContext } from '@iop/core';
import { GATE_HEADER, parseGateHeader } from '@iop/stream-gate';
import type { EdgeContext } from '../edge-context.js';
import { parseJsonObject } from '../http/json-body.js';
import { locals } from '../http/request-context.js';
import { chatPassthrough } from '../passthrough/chat.js';
import { startRequestSpan } from '../telemetry/request-tracing.js';
import type { InferenceRoute, RequestScope } from './inference-route.js';
import { servePassthrough } from './passthrough-path.js';
import { serveNormalized } from './normalized-path.js';
import { RequestOutcome } from './request-outcome.js';

export function inferenceHandler(route: InferenceRoute, edge: EdgeContext) {
  // Each request runs inside its span's context (telemetry/request-tracing.ts), so the pool's and
  // the tunnel's spans become its children and log lines carry its trace_id.
  return function inference(req: Request, res: Response, next: NextFunction): Promise<void> {
    const traced = startRequestSpan(req.headers, req.path, locals(res).requestId);
    const outcome = new RequestOutcome(edge, route.dialect, req, res, traced.span);
    return otelContext.with(traced.context, () => serve(req, res, next, outcome, traced.span.isRecording()));
  };

  async function serve(
    req: Request,
    res: Response,
    next: NextFunction,
    outcome: RequestOutcome,
    spanRecording: boolean,
  ): Promise<void> {
    const context = locals(res);
    try {
      const body = parseJsonObject(req.body);
      // The model the client named: in the body, or in the path (Gemini `models/{model}:…`).
      const askedModel = String(body.model ?? context.target?.params.model);
      outcome.asked(askedModel, body.model !== undefined || context.target?.params.model !== undefined);
      const gateHeader = req.get(GATE_HEADER);
      const overrides = gateHeader === undefined ? undefined : parseGateHeader(gateHeader);
      const scope: RequestScope = { route, edge, req, res, context, body, outcome, spanRecording, overrides };
      const relayed =
        route.relayed ??
        (route.passthrough &&
        overrides === undefined &&
        !edge.gates.needsContent(askedModel, body) &&
        !edge.pool.restrictsToolIds(askedModel)
          ? chatPassthrough
          : undefined);
      if (relayed !== undefined) await servePassthrough(scope, relayed);
      else await serveNormalized(scope, askedModel);
      outcome.settle();
    } catch (caught) {
      outcome.settle(caught);
      // A client that left before an answer (queued, or its run assigned: whatever failed after that, the run's
      // cancellation included, follows from it): nothing to send, no edge error.
      if (!outcome.clientLeft(caught)) next(caught);
    }
  }
}
