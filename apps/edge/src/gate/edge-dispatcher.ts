/**
 * The gate's way out: one attempt = one run on a provider, its chat SSE decoded into events.
 * Routing avoids the providers that faulted earlier in the same request; every failure before
 * the backend's answer (no provider, tunnel failure, non-2xx status) becomes an `error` event with
 * its HTTP status, and the gate decides whether to retry (its commit boundary knows whether the
 * client has seen anything).
 */
import { IopError, type StreamEvent } from '@iop/core';
import type { AttemptRequest, DispatchedAttempt, Dispatcher } from '@iop/stream-gate';
import type { EdgeContext } from '../edge-context.js';
import { createChatStreamDecoder, toBackendChatRequest } from '../dialects.js';
import { openRun, runFailure } from '../http/open-run.js';
import { readUpstreamError } from '../http/upstream-error.js';
import { FrameKind, type RunHandle } from '../tunnel/run-registry.js';
import type { Logger } from '../logger.js';

export interface EdgeDispatcherOptions {
  edge: EdgeContext;
  requestId: string;
  log: Logger;
  /** Called with every run started (so a client disconnect can cancel it) and each serving agent. */
  onRun?: (handle: RunHandle) => void;
}

function errorEvent(error: IopError): StreamEvent {
  return { type: 'error', code: error.code, message: error.message, status: error.status };
}

export class EdgeDispatcher implements Dispatcher {
  constructor(private readonly options: EdgeDispatcherOptions) {}

  dispatch(attempt: AttemptRequest, signal: AbortSignal): DispatchedAttempt {
    const state: { provider?: string } = {};
    const events = this.attemptEvents(attempt, signal, state);
    return {
      events,
      get provider() {
        return state.provider;
      },
    };
  }

  private async *attemptEvents(attempt: AttemptRequest, signal: AbortSignal, state: { provider?: string }): AsyncGenerator<StreamEvent> {
    const { edge, requestId, log } = this.options;
    const { request } = attempt;
    const backend = toBackendChatRequest(request, { model: request.model, stream: true });
    if (attempt.prefill !== undefined) {
      // vLLM / SGLang: continue the final assistant message instead of starting a new turn.
      backend.body.continue_final_message = true;
      backend.body.add_generation_prompt = false;
    }
    let handle: RunHandle | undefined;
    const cancel = () => handle?.cancel('attempt abandoned');
    signal.addEventListener('abort', cancel, { once: true });
    try {
      let start;
      try {
        ({ handle, start } = await openRun(
          { registry: edge.registry, runs: edge.runs, maxAttempts: 1, avoidAgents: new Set(attempt.avoidProviders) },
          { requestId, model: request.model, method: 'POST', path: '/v1/chat/completions', body: Buffer.from(JSON.stringify(backend.body)), idempotencyKey: attempt.idempotencyKey, openTimeoutMs: edge.config.runOpenTimeoutMs, firstByteTimeoutMs: edge.config.firstByteTimeoutMs },
          log,
          (started) => {
            if (started !== undefined) this.options.onRun?.(started);
          },
        ));
      } catch (error) {
        if (error instanceof IopError) {
          yield errorEvent(error);
          return;
        }
        throw error;
      }
      state.provider = handle.session.agentId;
      if (signal.aborted) return;
      if (start.status >= 400) {
        yield errorEvent(await readUpstreamError(handle, start.status, start.headers['retry-after']));
        return;
      }
      const pending: StreamEvent[] = [];
      const toolIds = backend.toolIds;
      const decoder = createChatStreamDecoder((event) => {
        pending.push(event.type === 'tool-call-delta' && event.id !== undefined && !toolIds.identity ? { ...event, id: toolIds.toClient(event.id) } : event);
      });
      for await (const frame of handle.frames) {
        if (frame.kind === FrameKind.BODY) decoder.push(frame.body);
        else if (frame.kind === FrameKind.ERROR) pending.push(errorEvent(runFailure(frame)));
        else if (frame.kind === FrameKind.END) decoder.end();
        if (pending.length > 0) {
          for (const event of pending) yield event;
          pending.length = 0;
        }
        if (signal.aborted) return;
      }
    } finally {
      signal.removeEventListener('abort', cancel);
      if (handle !== undefined && !handle.isFinished) handle.cancel('attempt ended');
    }
  }
}
