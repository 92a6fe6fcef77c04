/**
 * Path B of the inference pipeline, normalized: the client's body is decoded by its dialect into an
 * `InferenceRequest` (a 400 in the dialect's envelope when invalid), admitted, adjusted by a
 * stateful dialect (`prepare`: stored Responses history), and answered through the model's stream
 * gate (normalized/normalized.ts), whose attempts the dispatcher runs as Chat Completions on
 * providers that serve chat (normalized/edge-dispatcher.ts). Translation warnings reach the client
 * in `x-iop-warnings`. Its facts go to the request's outcome (request-outcome.ts), which settles it.
 */
import type { Response } from 'express';
import type { EncodeContext, InferenceRequest } from '@iop/core';
import { estimateRequestTokens } from '../dialects.js';
import { affinityKey } from '../pool/prefix-affinity.js';
import { prefixKeys } from '../pool/prefix-keys.js';
import { headerValue } from '../http/header-value.js';
import type { Logger } from '../logger.js';
import { providersWithoutApi } from '../passthrough/served-apis.js';
import { nameRequestSpan } from '../telemetry/request-tracing.js';
import { EdgeDispatcher } from '../normalized/edge-dispatcher.js';
import { writeNormalized } from '../normalized/normalized.js';
import type { RequestScope } from './inference-route.js';

/**
 * Answers the request through the gate.
 * @throws IopError a 400 for a body the dialect refuses, admission's refusals, the gate's failure
 *   before the first byte (no provider, every attempt failed or rejected, the deadline).
 */
export async function serveNormalized(scope: RequestScope, askedModel: string): Promise<void> {
  const { edge, route, res, body, outcome, context } = scope;
  outcome.answeredBy({ mode: 'normalized', policy: edge.gates.policyOf(askedModel) });
  let request = route.dialect.decodeRequest(body, context.target);
  const decoded = request;
  outcome.counted(undefined, () => estimateRequestTokens(decoded));
  await outcome.admit(request.model);
  // Translated requests reach the backend as Chat Completions: only providers that serve chat.
  const withoutChat = providersWithoutApi(edge.pool, request.model, 'chat');
  if (route.prepare !== undefined) request = await route.prepare(request, body, context);
  const model = request.model;
  const prepared = request;
  outcome.counted(model, () => estimateRequestTokens(prepared));
  nameRequestSpan(model);
  outcome.answeredBy({ mode: 'normalized', policy: edge.gates.policyOf(model) });
  const affinity = edge.pool.config.affinity; // read per request: a reload may change it
  const encodeContext: EncodeContext = {
    requestId: context.requestId,
    model,
    request,
    createdAt: Math.floor(Date.now() / 1000),
    estimateInputTokens: () => estimateRequestTokens(prepared),
  };
  const failure = await writeNormalized(res, {
    dialect: route.dialect,
    context: encodeContext,
    stream: request.stream,
    usage: outcome.usage,
    gate: edge.gates.gateFor(model),
    dispatcher: new EdgeDispatcher({
      edge,
      requestId: context.requestId,
      log: context.log,
      runs: outcome.runs,
      onRun: outcome.onRun,
      onWarnings: warningsHeader(res, request, context.log),
      onAttempt: () => outcome.usage.beginAttempt(),
      affinityKey: affinity.enabled ? affinityKey(request, affinity.prefixMessages) : undefined,
      prefixKeys: edge.pool.cacheAware ? prefixKeys(request) : undefined,
      deadline: outcome.deadline,
      withoutApi: withoutChat,
    }),
    signal: outcome.deadline.signal,
    stop: (error) => outcome.deadline.stop(error),
    writeStallTimeoutMs: edge.config.writeStallTimeoutMs,
    ...(scope.overrides === undefined ? {} : { overrides: scope.overrides }),
    onFirstByte: outcome.onFirstByte,
    finishReasons: outcome.finishReasons,
    ...(route.onResult === undefined
      ? {}
      : { onResult: (result: unknown) => route.onResult!(result, prepared, body, context) }),
  });
  outcome.ended(failure, outcome.runs.current?.runId);
}

/**
 * Sets `x-iop-warnings` from the request's translation warnings now, and returns the callback that adds what building
 * the backend request changed (is_error as text, tool images moved, max_tokens lowered).
 */
function warningsHeader(
  res: Response,
  request: InferenceRequest,
  log: Logger,
): (backendWarnings: readonly string[]) => void {
  const warnings = new Set(request.warnings);
  const setWarnings = () => {
    if (warnings.size > 0 && !res.headersSent) res.setHeader('x-iop-warnings', headerValue([...warnings].join('; ')));
  };
  setWarnings();
  if (warnings.size > 0) log.warn({ warnings: request.warnings }, 'request translated with warnings');
  return (backendWarnings) => {
    const fresh = backendWarnings.filter((warning) => !warnings.has(warning));
    if (fresh.length === 0) return;
    for (const warning of fresh) warnings.add(warning);
    log.warn({ warnings: fresh }, 'backend request built with warnings');
    setWarnings();
  };
}
