/**
 * The one inference pipeline, shared by every endpoint (chat completions, messages, responses):
 * parse → route → run through the tunnel → relay (path A) or decode/encode (path B). Endpoints
 * differ only by the Dialect they pass in and whether passthrough is possible.
 */
import type { NextFunction, Request, Response } from 'express';
import { IopError, type Dialect, type EncodeContext, type InferenceRequest } from '@iop/core';
import type { EdgeContext } from '../edge-context.js';
import { peekChatRequest, toBackendChatRequest, type ToolIdMap } from '../dialects.js';
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
  /** The client's dialect is the backend's (OpenAI Chat): relay bytes unless a filter needs the content. */
  passthrough: boolean;
  /** Hook for dialects with state (Responses): adjust the decoded request before dispatch (e.g. prepend stored history). */
  prepare?: (request: InferenceRequest, body: Record<string, unknown>) => Promise<InferenceRequest> | InferenceRequest;
  /** Receives the final response object of a normalized answer (e.g. to store it). */
  onResult?: (result: unknown, request: InferenceRequest, body: Record<string, unknown>) => void | Promise<void>;
}

interface Plan {
  model: string;
  stream: boolean;
  bytes: Uint8Array;
  request?: InferenceRequest;
  toolIds?: ToolIdMap;
}

async function plan(route: InferenceRoute, raw: Buffer, body: Record<string, unknown>): Promise<Plan> {
  if (route.passthrough) {
    const peek = peekChatRequest(body);
    return { model: peek.model, stream: peek.stream, bytes: raw };
  }
  let request = route.dialect.decodeRequest(body);
  if (route.prepare !== undefined) request = await route.prepare(request, body);
  const backend = toBackendChatRequest(request, { model: request.model, stream: true });
  return { model: request.model, stream: request.stream, bytes: Buffer.from(JSON.stringify(backend.body)), request, toolIds: backend.toolIds };
}

export function inferenceHandler(route: InferenceRoute, edge: EdgeContext) {
  return async function inference(req: Request, res: Response, next: NextFunction): Promise<void> {
    const { requestId, log, startedAt } = locals(res);
    let current: RunHandle | undefined;
    let model = 'unknown';
    res.on('close', () => {
      if (!res.writableFinished && current !== undefined && !current.isFinished) {
        current.cancel('client disconnected');
        log.info({ runId: current.runId }, 'client disconnected; run cancelled');
      }
    });
    try {
      const body = parseJsonObject(req.body);
      const work = await plan(route, req.body as Buffer, body);
      model = work.model;
      if (work.request?.warnings !== undefined && work.request.warnings.length > 0) {
        res.setHeader('x-iop-warnings', work.request.warnings.join('; ').replace(/[\r\n]/g, ' '));
        log.warn({ warnings: work.request.warnings }, 'request translated with warnings');
      }
      const usage = new UsageRecorder(edge.metrics, model);
      const { handle, start } = await openRun(
        { registry: edge.registry, runs: edge.runs, maxAttempts: edge.config.maxAttempts },
        { requestId, model, method: 'POST', path: '/v1/chat/completions', body: work.bytes, openTimeoutMs: edge.config.runOpenTimeoutMs, firstByteTimeoutMs: edge.config.firstByteTimeoutMs },
        log,
        (handle) => {
          current = handle;
        },
      );
      if (res.destroyed) {
        handle.cancel('client disconnected');
        return;
      }
      log.debug({ runId: handle.runId, agentId: handle.session.agentId }, 'run started');
      res.setHeader('x-iop-agent-id', handle.session.agentId);
      if (start.status >= 400) throw await readUpstreamError(handle, start.status, start.headers['retry-after']);
      const onFirstByte = () => edge.metrics.ttft.observe({ dialect: route.dialect.name, model }, (performance.now() - startedAt) / 1000);
      if (work.request === undefined) {
        await relay(handle, start, res, { stream: work.stream, usage });
      } else {
        const context: EncodeContext = { requestId, model, request: work.request, createdAt: Math.floor(Date.now() / 1000) };
        const request = work.request;
        await writeNormalized(handle, res, {
          dialect: route.dialect,
          context,
          stream: work.stream,
          usage,
          toolIds: work.toolIds!,
          onFirstByte,
          onResult: route.onResult === undefined ? undefined : (result) => void route.onResult!(result, request, body),
        });
      }
      const tokens = usage.flush();
      const durationMs = performance.now() - startedAt;
      edge.metrics.requests.inc({ dialect: route.dialect.name, model, status: String(res.statusCode) });
      edge.metrics.duration.observe({ dialect: route.dialect.name, model }, durationMs / 1000);
      log.info({ model, agentId: handle.session.agentId, status: res.statusCode, durationMs: Math.round(durationMs * 10) / 10, usage: tokens }, 'request completed');
    } catch (error) {
      if (error instanceof IopError) edge.metrics.requests.inc({ dialect: route.dialect.name, model: error.code === 'model_not_found' ? 'unknown' : model, status: String(error.status) });
      next(error);
    }
  };
}
