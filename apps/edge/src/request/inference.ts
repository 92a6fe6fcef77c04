/**
 * The one inference pipeline, shared by every inference endpoint (chat completions, messages, responses, Gemini):
 * parse → (passthrough | gate) → run through the tunnel → relay bytes (path A) or encode released
 * events (path B). Endpoints differ only by the Dialect they pass in, whether passthrough is
 * possible, and optional hooks for stateful dialects.
 */
import type { NextFunction, Request, Response } from 'express';
import { IopError, type Dialect, type EncodeContext, type InferenceRequest } from '@iop/core';
import { GATE_HEADER, parseGateHeader } from '@iop/stream-gate';
import type { EdgeContext } from '../edge-context.js';
import { estimateRequestTokens } from '../dialects.js';
import { EdgeDispatcher } from '../normalized/edge-dispatcher.js';
import { policyLabel } from '../gate/gate-registry.js';
import { NO_RESPONSE_MODE, PASSTHROUGH_LABELS, type ResponseLabels } from '../metrics.js';
import type { RunStream } from '../pool/run-stream.js';
import type { PoolPick } from '../pool/provider-pool.js';
import { affinityKey } from '../pool/prefix-affinity.js';
import { prefixKeys } from '../pool/prefix-keys.js';
import { chatPassthrough } from '../passthrough/chat.js';
import type { PassthroughApi } from '../passthrough/passthrough-api.js';
import { providersWithoutApi } from '../passthrough/served-apis.js';
import { headerValue } from '../http/header-value.js';
import { ModelRewriter } from '../http/model-rewrite.js';
import { parseJsonObject } from '../http/json-body.js';
import { locals, type RequestLocals } from '../http/request-context.js';
import { openRun } from '../attempt/open-run.js';
import { ClientGone, RequestDeadline } from '../attempt/request-deadline.js';
import { firstChunkFailure, relay } from '../passthrough/relay.js';
import { writeNormalized } from '../normalized/normalized.js';
import { UsageRecorder } from '../attempt/usage-recorder.js';
import { otelContext } from '@iop/core';
import {
  endRequestSpan,
  nameRequestSpan,
  startRequestSpan,
  type RequestOutcome,
} from '../telemetry/request-tracing.js';
import { admitRequest, type RequestAdmission } from './admission.js';

export interface InferenceRoute {
  dialect: Dialect;
  /** The client's dialect is the backend's (OpenAI Chat): relay bytes unless a gate filter needs the content. */
  passthrough: boolean;
  /**
   * A JSON API always relayed as it is, never through the gate (embeddings, completions, rerank, score:
   * passthrough-apis/).
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

export function inferenceHandler(route: InferenceRoute, edge: EdgeContext) {
  const metricLabels = (model: string) => ({ dialect: route.dialect.name, model: edge.knownModel(model) });
  /**
   * The status the client gets for an error: the dialect's (Anthropic renders `overloaded` and `no_capacity` as 529).
   */
  const clientStatus = (error: IopError) => route.dialect.errorResponse(error, '').status;

  // Each request runs inside its span's context (telemetry/request-tracing.ts), so the pool's and
  // the tunnel's spans become its children and log lines carry its trace_id.
  return function inference(req: Request, res: Response, next: NextFunction): Promise<void> {
    const traced = startRequestSpan(req.headers, req.path, locals(res).requestId);
    // Filled in while the request runs: the provider's name, the usage billed, the finish reasons.
    const outcome: RequestOutcome = {};
    res.once('close', () =>
      endRequestSpan(
        traced.span,
        res.statusCode,
        res.getHeader('x-iop-model') as string | undefined,
        res.getHeader('x-iop-agent-id') as string | undefined,
        outcome,
      ),
    );
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
    const { requestId, log, startedAt } = context;
    const tracked = edge.requests.open(requestId, route.dialect.name, context.identity?.keyId);
    res.once('close', () => edge.requests.close(tracked));
    const affinity = edge.pool.config.affinity; // read per request: a reload may change it
    // One signal stops the request: client gone, the deadline, or a client that stopped reading.
    const abort = new RequestDeadline(edge.config.requestDeadlineMs);
    const timeouts = {
      acceptedTimeoutMs: edge.config.runAcceptedTimeoutMs,
      firstByteTimeoutMs: edge.config.firstByteTimeoutMs,
      idleTimeoutMs: edge.config.idleTimeoutMs,
      deadline: abort,
    };
    let current: RunStream | undefined;
    let model = 'unknown';
    /** The request was stopped while a backend worked on it (billed at least its prompt when no usage comes). */
    let stoppedMidRun = false;
    const noteStop = () => {
      if (current !== undefined && current.accepted && !current.isFinished) stoppedMidRun = true;
    };
    res.on('close', () => {
      abort.clear();
      if (res.writableFinished) return;
      noteStop();
      abort.stop(new ClientGone());
      if (current !== undefined && !current.isFinished) {
        current.cancel('client disconnected');
        log.info({ runId: current.runId }, 'client disconnected; run cancelled');
      }
    });
    abort.signal.addEventListener(
      'abort',
      () => {
        noteStop();
        if (current !== undefined && !current.isFinished) current.cancel(abort.error?.message ?? 'client disconnected');
      },
      { once: true },
    );
    let servedModel: string | undefined;
    let admission: RequestAdmission | undefined;
    let attempts = 0;
    const onRun = (run: RunStream, pick: PoolPick) => {
      current = run;
      attempts++;
      servedModel = pick.model;
      Object.assign(tracked, { attempts, servedModel: pick.model, agent: run.providerId });
      outcome.providerName = pick.provider.providerName;
      if (!res.headersSent) {
        res.setHeader('x-iop-agent-id', headerValue(run.providerId));
        res.setHeader('x-iop-model', headerValue(pick.model));
      }
    };
    let inFlight: { inc(): void; dec(): void } | undefined;
    let streamError: string | undefined; // a stream that ended with an in-band error (status 200)
    /** The status a stream that failed after its first byte is counted with (its HTTP status was 200). */
    let inBandStatus: number | undefined;
    /**
     * How the answer was produced, for the completion log and the metrics: bytes relayed, or normalized through the
     * gate (and its policy); set when the path is chosen.
     */
    let responseMode:
      | { mode: 'passthrough' }
      | { mode: 'normalized'; policy: ReturnType<EdgeContext['gates']['policyOf']> }
      | undefined;
    const responseLabels = (): ResponseLabels => {
      if (responseMode === undefined) return NO_RESPONSE_MODE;
      return responseMode.mode === 'passthrough'
        ? PASSTHROUGH_LABELS
        : { mode: 'normalized', policy: policyLabel(responseMode.policy) };
    };
    res.once('close', () => inFlight?.dec());
    const usage = new UsageRecorder(edge.metrics);
    /** The answer's finish reasons (the request span's `gen_ai.response.finish_reasons`). */
    const finishReasons: string[] = [];
    outcome.finishReasons = finishReasons;
    /** The prompt's token estimate, for a stream billed without the backend's usage (set with the path). */
    let promptTokens = () => bodyTokenEstimate(req.body);
    /** Bills an estimate when the backend did work but sent no usage (usage-recorder.ts). */
    const settleUsage = () => usage.settle(stoppedMidRun, promptTokens);
    /** A stream that ended with an in-band error after its first byte: billed and counted with that error's status. */
    /**
     * The status a request that got an answer is counted with, in the ledger, the metrics and the
     * log alike: 499 when the client left before its end (nginx's convention), else the in-band
     * error's status for a stream that ended with one, else the HTTP status.
     */
    const finalStatus = () => (abort.clientGone ? 499 : (inBandStatus ?? res.statusCode));
    const endedInBand = (failure: IopError | undefined, runId: string | undefined) => {
      if (failure === undefined) return;
      settleUsage();
      // Not an answer: its tokens count as a failed attempt's.
      usage.flush(metricLabels(model).model, responseLabels(), 'failed');
      // A client that left mid-stream stopped it: 499 `client_gone`, not the upstream error.
      const gone = abort.clientGone;
      inBandStatus = gone ? 499 : clientStatus(failure);
      streamError = gone ? 'client_gone' : failure.code;
      if (!gone) log.warn({ runId, code: failure.code, error: failure.message }, 'stream ended with an in-band error');
    };
    try {
      const body = parseJsonObject(req.body);
      // The model the client named: in the body, or in the path (Gemini `models/{model}:…`).
      const askedModel = String(body.model ?? context.target?.params.model);
      tracked.model = body.model === undefined && context.target?.params.model === undefined ? null : askedModel;
      inFlight = edge.metrics.inFlight.labels(metricLabels(askedModel));
      inFlight.inc();
      const gateHeader = req.get(GATE_HEADER);
      const overrides = gateHeader === undefined ? undefined : parseGateHeader(gateHeader);
      let ttftSeconds: number | undefined;
      const onFirstByte = () => {
        ttftSeconds = (performance.now() - startedAt) / 1000;
        edge.metrics.ttft.observe(metricLabels(model), ttftSeconds);
      };

      const summary = (status: number, tokens: ReturnType<UsageRecorder['flush']>) => ({
        status,
        usage: tokens,
        tokensEstimated: usage.estimated,
        servedModel,
        agentId: current?.providerId,
        attempts,
        ttftMs: ttftSeconds === undefined ? undefined : ttftSeconds * 1000,
        durationMs: performance.now() - startedAt,
      });
      let failedStatus: number | undefined;
      try {
        const relayedApi =
          route.relayed ??
          (route.passthrough &&
          overrides === undefined &&
          !edge.gates.needsContent(askedModel, body) &&
          !edge.pool.restrictsToolIds(askedModel)
            ? chatPassthrough
            : undefined);
        if (relayedApi !== undefined) {
          responseMode = { mode: 'passthrough' };
          // The same 400s as the translated path, before any backend call.
          const peek = relayedApi.read(body, req.body as Buffer);
          model = peek.model;
          promptTokens = peek.promptTokens;
          nameRequestSpan(model);
          admission = await admitRequest(edge, res, route.dialect, model);
          // Only providers that serve this API (a 400 when none of the model's does).
          const avoid = providersWithoutApi(edge.pool, model, relayedApi.api);
          const opened = await openRun(
            edge.pool,
            {
              requestId,
              model,
              method: 'POST',
              path: relayedApi.backendPath,
              bodyFor: peek.bodyFor,
              ...timeouts,
              affinityKey: affinity.enabled ? peek.affinityKey?.(affinity.prefixMessages) : undefined,
              prefixKeys: edge.pool.cacheAware ? peek.prefixKeys?.() : undefined,
              signal: abort.signal,
              wholeBody: !peek.stream,
              ...(avoid.size === 0 ? {} : { avoid }),
              ...(peek.stream ? { checkFirst: firstChunkFailure } : {}),
            },
            log,
            onRun,
          );
          if (res.destroyed) {
            opened.run.cancel('client disconnected');
            return;
          }
          const rewriter = opened.model === model ? undefined : new ModelRewriter(opened.model, model);
          const failure = await relay(opened.run, opened.start, res, {
            stream: peek.stream,
            includeUsage: peek.includeUsage,
            choices: peek.choices,
            usage,
            onFirstByte,
            first: opened.first,
            rewriter,
            answer: opened.answer,
            finishAnswer: peek.finishAnswer,
            // A non-stream answer is read for them only while its span records (a stream's come from its guard at no
            // cost).
            ...(peek.stream || spanRecording ? { finishReasons } : {}),
            signal: abort.signal,
            writeStallTimeoutMs: edge.config.writeStallTimeoutMs,
          });
          endedInBand(failure, opened.run.runId);
        } else {
          responseMode = { mode: 'normalized', policy: edge.gates.policyOf(askedModel) };
          let request = route.dialect.decodeRequest(body, context.target);
          promptTokens = () => estimateRequestTokens(request);
          admission = await admitRequest(edge, res, route.dialect, request.model);
          // Translated requests reach the backend as Chat Completions: only providers that serve chat.
          const withoutChat = providersWithoutApi(edge.pool, request.model, 'chat');
          if (route.prepare !== undefined) request = await route.prepare(request, body, context);
          model = request.model;
          nameRequestSpan(model);
          const warnings = new Set(request.warnings);
          const setWarnings = () => {
            if (warnings.size > 0 && !res.headersSent)
              res.setHeader('x-iop-warnings', headerValue([...warnings].join('; ')));
          };
          setWarnings();
          if (warnings.size > 0) log.warn({ warnings: request.warnings }, 'request translated with warnings');
          // What building the backend request changed (is_error as text, tool images moved, max_tokens lowered).
          const onWarnings = (backendWarnings: readonly string[]) => {
            const fresh = backendWarnings.filter((warning) => !warnings.has(warning));
            if (fresh.length === 0) return;
            for (const warning of fresh) warnings.add(warning);
            log.warn({ warnings: fresh }, 'backend request built with warnings');
            setWarnings();
          };
          responseMode = { mode: 'normalized', policy: edge.gates.policyOf(model) };
          const decoded = request;
          const encodeContext: EncodeContext = {
            requestId,
            model,
            request,
            createdAt: Math.floor(Date.now() / 1000),
            estimateInputTokens: () => estimateRequestTokens(decoded),
          };
          const failure = await writeNormalized(res, {
            dialect: route.dialect,
            context: encodeContext,
            stream: request.stream,
            usage,
            gate: edge.gates.gateFor(model),
            dispatcher: new EdgeDispatcher({
              edge,
              requestId,
              log,
              onRun,
              onWarnings,
              onAttempt: () => usage.beginAttempt(),
              affinityKey: affinity.enabled ? affinityKey(request, affinity.prefixMessages) : undefined,
              prefixKeys: edge.pool.cacheAware ? prefixKeys(request) : undefined,
              deadline: abort,
              withoutApi: withoutChat,
            }),
            signal: abort.signal,
            stop: (error) => abort.stop(error),
            writeStallTimeoutMs: edge.config.writeStallTimeoutMs,
            ...(overrides === undefined ? {} : { overrides }),
            onFirstByte,
            finishReasons,
            ...(route.onResult === undefined
              ? {}
              : { onResult: (result: unknown) => route.onResult!(result, request, body, context) }),
          });
          endedInBand(failure, current?.runId);
        }
      } catch (caught) {
        failedStatus = abort.clientGone ? 499 : caught instanceof IopError ? clientStatus(caught) : 500;
        throw caught;
      } finally {
        settleUsage();
        outcome.usage = usage.value;
        admission?.complete(summary(failedStatus ?? finalStatus(), usage.value));
      }
      const tokens = usage.flush(metricLabels(model).model, responseLabels());
      const durationMs = performance.now() - startedAt;
      const status = finalStatus();
      const failed =
        res.statusCode >= 400 ? String(res.statusCode) : (streamError ?? (status === 499 ? 'client_gone' : undefined));
      edge.metrics.recordRequest({
        ...metricLabels(model),
        servedModel,
        agent: current?.providerId,
        providerName: outcome.providerName,
        keyId: context.identity?.keyId,
        status,
        durationSeconds: durationMs / 1000,
        ttftSeconds,
        usage: tokens,
        errorType: failed,
        response: responseLabels(),
      });
      log.info(
        {
          model,
          servedModel,
          agentId: current?.providerId,
          status,
          durationMs: Math.round(durationMs * 10) / 10,
          usage: tokens,
          usageEstimated: usage.estimated || undefined,
          ...responseMode,
          aborted: abort.signal.aborted || undefined,
        },
        'request completed',
      );
      abort.clear();
    } catch (caught) {
      abort.clear();
      if (caught instanceof ClientGone || abort.clientGone) {
        // The client left before an answer (queued, or its run already assigned: whatever failed
        // after that, the run's cancellation included, follows from it): nothing to send, no edge
        // error. 499: nginx's convention.
        edge.metrics.recordRequest({
          ...metricLabels(model),
          servedModel,
          agent: current?.providerId,
          providerName: outcome.providerName,
          keyId: context.identity?.keyId,
          status: 499,
          durationSeconds: (performance.now() - startedAt) / 1000,
          ttftSeconds: undefined,
          usage: undefined,
          errorType: 'client_gone',
          response: responseLabels(),
        });
        const tokens = usage.flush(metricLabels(model).model, responseLabels(), 'failed');
        log.info(
          {
            model,
            durationMs: Math.round((performance.now() - startedAt) * 10) / 10,
            usage: tokens,
            usageEstimated: usage.estimated || undefined,
          },
          'client disconnected before the answer',
        );
        return;
      }
      if (caught instanceof IopError)
        edge.metrics.recordRequest({
          ...metricLabels(model),
          servedModel,
          agent: current?.providerId,
          providerName: outcome.providerName,
          keyId: context.identity?.keyId,
          status: clientStatus(caught),
          durationSeconds: (performance.now() - startedAt) / 1000,
          ttftSeconds: undefined,
          usage: undefined,
          errorType: caught.code,
          response: responseLabels(),
        });
      next(caught);
    }
  }
}

/** A prompt estimate from the body's size alone (~4 bytes of JSON per token), for a body that did not decode. */
function bodyTokenEstimate(raw: unknown): number {
  return Math.ceil((Buffer.isBuffer(raw) ? raw.length : 0) / 4);
}
