/**
 * Path A of the inference pipeline, passthrough: a request whose answer the backend already speaks
 * (Chat Completions with no gate filter concerned, and the JSON APIs relayed as they are) is read
 * only for what routing and billing need (`PassthroughApi.read`: the same 400s as the translated
 * path, before any backend call), admitted, run on a provider that serves its API (`openRun`,
 * retried up to the commit point) and relayed (passthrough/relay.ts). Its facts go to the
 * request's outcome (request-outcome.ts), which settles it.
 */
import { nameRequestSpan } from '../telemetry/request-tracing.js';
import { ModelRewriter } from '../http/model-rewrite.js';
import type { PassthroughApi } from '../passthrough/passthrough-api.js';
import { providersWithoutApi } from '../passthrough/served-apis.js';
import { firstChunkFailure, relay } from '../passthrough/relay.js';
import { openRun } from '../attempt/open-run.js';
import { ClientGone } from '../attempt/request-deadline.js';
import type { RequestScope } from './inference-route.js';

/**
 * Relays `api`'s answer to the request.
 * @throws IopError a 400 for a body the API refuses, admission's refusals, `openRun`'s failures
 *   (no provider, every attempt failed, the deadline); `ClientGone` when the client left as the run opened.
 */
export async function servePassthrough(scope: RequestScope, api: PassthroughApi): Promise<void> {
  const { edge, req, res, body, outcome, context } = scope;
  outcome.answeredBy({ mode: 'passthrough' });
  const peek = api.read(body, req.body as Buffer);
  const model = peek.model;
  outcome.counted(model, peek.promptTokens);
  nameRequestSpan(model);
  await outcome.admit(model);
  // Only providers that serve this API (a 400 when none of the model's does).
  const avoid = providersWithoutApi(edge.pool, model, api.api);
  const affinity = edge.pool.config.affinity; // read per request: a reload may change it
  const { deadline, runs } = outcome;
  const opened = await openRun(
    edge.pool,
    {
      requestId: context.requestId,
      model,
      method: 'POST',
      path: api.backendPath,
      bodyFor: peek.bodyFor,
      acceptedTimeoutMs: edge.config.runAcceptedTimeoutMs,
      firstByteTimeoutMs: edge.config.firstByteTimeoutMs,
      idleTimeoutMs: edge.config.idleTimeoutMs,
      deadline,
      affinityKey: affinity.enabled ? peek.affinityKey?.(affinity.prefixMessages) : undefined,
      prefixKeys: edge.pool.cacheAware ? peek.prefixKeys?.() : undefined,
      signal: deadline.signal,
      runs,
      wholeBody: !peek.stream,
      ...(avoid.size === 0 ? {} : { avoid }),
      ...(peek.stream ? { checkFirst: firstChunkFailure } : {}),
    },
    context.log,
    outcome.onRun,
  );
  if (res.destroyed) {
    runs.cancel(opened.run, 'client disconnected');
    throw new ClientGone();
  }
  const failure = await relay(opened.run, opened.start, res, {
    stream: peek.stream,
    runs,
    includeUsage: peek.includeUsage,
    choices: peek.choices,
    usage: outcome.usage,
    onFirstByte: outcome.onFirstByte,
    first: opened.first,
    rewriter: opened.model === model ? undefined : new ModelRewriter(opened.model, model),
    answer: opened.answer,
    finishAnswer: peek.finishAnswer,
    // A non-stream answer is read for them only while its span records (a stream's come from its guard at no cost).
    ...(peek.stream || scope.spanRecording ? { finishReasons: outcome.finishReasons } : {}),
    signal: deadline.signal,
    writeStallTimeoutMs: edge.config.writeStallTimeoutMs,
  });
  outcome.ended(failure, opened.run.runId);
}
