/**
 * The one inference pipeline, shared by every endpoint (chat completions, messages, responses):
 * parse → (passthrough | gate) → run through the tunnel → relay bytes (path A) or encode released
 * events (path B). Endpoints differ only by the Dialect they pass in, whether passthrough is
 * possible, and optional hooks for stateful dialects.
 */
import type { NextFunction, Request, Response } from 'express';
import { IopError, type Dialect, type EncodeContext, type InferenceRequest } from '@iop/core';
import { GATE_HEADER, parseGateHeader } from '@iop/stream-gate';
import type { EdgeContext } from '../edge-context.js';
import { peekChatRequest } from '../dialects.js';
import { EdgeDispatcher } from '../gate/edge-dispatcher.js';
import type { RunHandle } from '../tunnel/run-registry.js';
import { parseJsonObject } from './json-body.js';
import { locals } from './request-context.js';
import { openRun } from './open-run.js';
import { relay } from './relay.js';
import { writeNormalized } from './normalized.js';
import { readUpstreamError } from './upstream-error.js';
import { UsageRecorder } from './usage-recorder.js';

export interface InferenceRoute {
  dialect: Dialect;
  /** The client's dialect is the backend's (OpenAI Chat): relay bytes unless a gate filter needs the content. */
  passthrough: boolean;
  /** Stateful dialects (Responses): adjust the decoded request before dispatch (e.g. prepend stored history). */
  prepare?: (request: InferenceRequest, body: Record<string, unknown>) => Promise<InferenceRequest> | InferenceRequest;
  /** Receives the final response object of a normalized answer (e.g. to store it). */
  onResult?: (result: unknown, request: InferenceRequest, body: Record<string, unknown>) => void | Promise<void>;
}

export function inferenceHandler(route: InferenceRoute, edge: EdgeContext) {
  const metricLabels = (model: string) => ({ dialect: route.dialect.name, model: edge.registry.forModel(model).length > 0 ? model : 'unknown' });

  return async function inference(req: Request, res: Response, next: NextFunction): Promise<void> {
    const { requestId, log, startedAt } = locals(res);
    const abort = new AbortController();
    let current: RunHandle | undefined;
    let model = 'unknown';
    res.on('close', () => {
      if (res.writableFinished) return;
      abort.abort();
      if (current !== undefined && !current.isFinished) {
        current.cancel('client disconnected');
        log.info({ runId: current.runId }, 'client disconnected; run cancelled');
      }
    });
    const onRun = (handle: RunHandle) => {
      current = handle;
      if (!res.headersSent) res.setHeader('x-iop-agent-id', handle.session.agentId);
    };
    try {
      const body = parseJsonObject(req.body);
      const gateHeader = req.get(GATE_HEADER);
      const overrides = gateHeader === undefined ? undefined : parseGateHeader(gateHeader);
      const usage = new UsageRecorder(edge.metrics, 'pending');
      const onFirstByte = () => edge.metrics.ttft.observe(metricLabels(model), (performance.now() - startedAt) / 1000);

      if (route.passthrough && overrides === undefined && !edge.gates.needsContent(String(body.model), body)) {
        const peek = peekChatRequest(body);
        model = peek.model;
        const { handle, start } = await openRun(
          { registry: edge.registry, runs: edge.runs, maxAttempts: edge.config.maxAttempts },
          { requestId, model, method: 'POST', path: '/v1/chat/completions', body: req.body as Buffer, openTimeoutMs: edge.config.runOpenTimeoutMs, firstByteTimeoutMs: edge.config.firstByteTimeoutMs },
          log,
          (handle) => handle !== undefined && onRun(handle),
        );
        if (res.destroyed) {
          handle.cancel('client disconnected');
          return;
        }
        if (start.status >= 400) throw await readUpstreamError(handle, start.status, start.headers['retry-after']);
        await relay(handle, start, res, { stream: peek.stream, usage, onFirstByte });
      } else {
        let request = route.dialect.decodeRequest(body);
        if (route.prepare !== undefined) request = await route.prepare(request, body);
        model = request.model;
        if (request.warnings !== undefined && request.warnings.length > 0) {
          res.setHeader('x-iop-warnings', request.warnings.join('; ').replace(/[\r\n]/g, ' '));
          log.warn({ warnings: request.warnings }, 'request translated with warnings');
        }
        const context: EncodeContext = { requestId, model, request, createdAt: Math.floor(Date.now() / 1000) };
        await writeNormalized(res, {
          dialect: route.dialect,
          context,
          stream: request.stream,
          usage,
          gate: edge.gates.gateFor(model),
          dispatcher: new EdgeDispatcher({ edge, requestId, log, onRun }),
          signal: abort.signal,
          ...(overrides === undefined ? {} : { overrides }),
          onFirstByte,
          ...(route.onResult === undefined ? {} : { onResult: (result: unknown) => void route.onResult!(result, request, body) }),
        });
      }
      const tokens = usage.flush(metricLabels(model).model);
      const durationMs = performance.now() - startedAt;
      edge.metrics.requests.inc({ ...metricLabels(model), status: String(res.statusCode) });
      edge.metrics.duration.observe(metricLabels(model), durationMs / 1000);
      log.info({ model, agentId: current?.session.agentId, status: res.statusCode, durationMs: Math.round(durationMs * 10) / 10, usage: tokens, aborted: abort.signal.aborted || undefined }, 'request completed');
    } catch (error) {
      if (error instanceof IopError) edge.metrics.requests.inc({ ...metricLabels(model), status: String(error.status) });
      next(error);
    }
  };
}
