/**
 * One request to a backend, relayed as ProviderTunnelFrames: RESPONSE_START (status, headers),
 * BODY (the backend's bytes as they arrive), USAGE (seen in the body), then END — or ERROR with a
 * stable code (`connect_failed`, `backend_reset`, `first_byte_timeout`, `idle_timeout`,
 * `cancelled`, `internal`; proto/iop/v1/tunnel.proto). Shared by the agent's runs (frames sent
 * over the tunnel) and the edge's direct providers (frames queued in process), so both behave the
 * same.
 *
 * Pull-based: the next backend slice is read only when the consumer asks for the next frame, so a
 * slow consumer slows the backend socket, never a buffer. The idle clock runs only while the relay
 * waits on the backend, not while the consumer holds it back.
 *
 * Stopping: aborting `controller` stops the backend request at once; so does any failure, and a
 * consumer that stops iterating early (`return()`): no backend generation is left running.
 */
import type { ProviderTunnelFrame } from '@iop/proto';
import type { BackendCall } from './backend-call.js';
import { bodyFrame, endFrame, errorFrame, responseStartFrame, usageFrame } from './frames.js';
import { RunFailure, toRunFailure } from './run-failure.js';
import { UsageScanner, usageBodyKindOf, type TokenUsage } from './usage-scanner.js';

export interface RelayRequest {
  runId: string;
  requestId: string;
  method: string;
  path: string;
  headers: Record<string, string>;
  body: Uint8Array;
  /** No first body byte within this time fails the run, ms. */
  firstByteTimeoutMs: number;
  /** Longest wait for the next body slice once the body started, ms. */
  idleTimeoutMs: number;
}

export interface RelayHooks {
  onFirstByte?(status: number): void;
  /** Body bytes relayed so far, after each slice. */
  onBytes?(total: number): void;
  onEnd?(result: { status: number; bytes: number; usage: TokenUsage | undefined }): void;
  onFailure?(failure: RunFailure, bytes: number, error: unknown): void;
}

export async function* relayBackend(
  backend: BackendCall,
  request: RelayRequest,
  controller: AbortController,
  hooks: RelayHooks = {},
): AsyncGenerator<ProviderTunnelFrame> {
  const { signal } = controller;
  const { runId } = request;
  const abortWith = (failure: RunFailure) => {
    if (!signal.aborted) controller.abort(failure);
  };
  let firstByteTimer: NodeJS.Timeout | undefined = setTimeout(
    () => abortWith(new RunFailure('first_byte_timeout', `no first byte within ${request.firstByteTimeoutMs} ms`)),
    request.firstByteTimeoutMs,
  );
  let idleTimer: NodeJS.Timeout | undefined;
  let waiting = false;
  let started = false;
  let done = false;
  let bytes = 0;
  try {
    const response = await backend.handle({
      method: request.method,
      path: request.path,
      headers: request.headers,
      body: request.body,
      signal,
      requestId: request.requestId,
    });
    started = true;
    yield responseStartFrame(runId, response.status, response.headers);
    const usage = new UsageScanner(usageBodyKindOf(response.headers['content-type']));
    const body = response.body[Symbol.asyncIterator]();
    for (;;) {
      if (bytes > 0) {
        waiting = true;
        idleTimer ??= setTimeout(() => {
          if (waiting) abortWith(new RunFailure('idle_timeout', `no body byte for ${request.idleTimeoutMs} ms`));
        }, request.idleTimeoutMs);
        idleTimer.refresh();
      }
      const slice = await body.next();
      waiting = false;
      if (slice.done === true) break;
      if (bytes === 0) {
        clearTimeout(firstByteTimer);
        firstByteTimer = undefined;
        hooks.onFirstByte?.(response.status);
      }
      bytes += slice.value.length;
      hooks.onBytes?.(bytes);
      usage.push(slice.value);
      yield bodyFrame(runId, slice.value);
    }
    if (signal.aborted) throw signal.reason;
    const tokens = usage.finish();
    if (tokens !== undefined) yield usageFrame(runId, tokens);
    done = true;
    hooks.onEnd?.({ status: response.status, bytes, usage: tokens });
    yield endFrame(runId);
  } catch (error) {
    const failure = toRunFailure(error, signal, started);
    done = true;
    // Whatever ended the run, the backend request must stop now: an unconsumed body would
    // otherwise keep the model generating.
    abortWith(failure);
    hooks.onFailure?.(failure, bytes, error);
    yield errorFrame(runId, failure.code, failure.message);
  } finally {
    clearTimeout(firstByteTimer);
    clearTimeout(idleTimer);
    // Closed early by the consumer (`return()`): stop the backend too.
    if (!done) abortWith(new RunFailure('cancelled', 'relay closed by its consumer'));
  }
}
