/**
 * One request to a backend, relayed as ProviderTunnelFrames: RESPONSE_START (status, headers),
 * BODY (the backend's bytes as they arrive), USAGE (seen in the body), then END — or ERROR with a
 * stable code (`connect_failed`, `backend_reset`, `first_byte_timeout`, `idle_timeout`,
 * `cancelled`, `internal`; proto/iop/v1/tunnel.proto). Shared by the agent's runs (frames written
 * on the run's tunnel call) and the edge's direct providers (frames queued in process), so both
 * behave the same.
 *
 * Push-based: each body slice becomes a frame handed to `sink` in the same call that read it
 * (for a Node `Readable` body such as undici's, in its 'data' event: no promise, queue or
 * iterator step per token between the backend socket and the tunnel). A sink that returns a
 * promise is full: the body is paused until the promise settles, so a slow consumer slows the
 * backend socket, never a buffer. The idle clock runs only while the relay waits on the backend, not while the
 * sink holds it back.
 *
 * Stopping: aborting `controller` stops the backend request at once (undici destroys the socket;
 * the embedded backend stops generating), and the relay ends with an ERROR frame carrying the
 * abort's reason; so does any failure. Every path ends with exactly one END or ERROR frame.
 */
import { Readable, finished } from 'node:stream';
import type { ProviderTunnelFrame } from '@iop/proto';
import type { BackendCall } from './backend-call.js';
import { bodyFrame, endFrame, errorFrame, responseStartFrame, usageFrame } from './frames.js';
import { RunErrorCode } from './run-errors.js';
import { RunFailure, toRunFailure } from './run-failure.js';
import { UsageScanner, usageBodyKindOf } from '@iop/backend-wire';
import type { Usage } from '@iop/core';

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
  onEnd?(result: { status: number; bytes: number; usage: Usage | undefined }): void;
  onFailure?(failure: RunFailure, bytes: number, error: unknown): void;
}

/**
 * Takes one frame of the run. `undefined`: ready for the next; a promise: full, the relay reads
 * no more of the body until it settles. Must not throw.
 */
export type FrameSink = (frame: ProviderTunnelFrame) => Promise<void> | undefined;

/**
 * Relays one backend call into `sink`. Resolves once the final frame (END or ERROR) was handed to
 * the sink; never rejects (a failure is the ERROR frame, reported to `hooks.onFailure` too).
 */
export async function relayBackend(
  backend: BackendCall,
  request: RelayRequest,
  controller: AbortController,
  sink: FrameSink,
  hooks: RelayHooks = {},
): Promise<void> {
  const { signal } = controller;
  const { runId } = request;
  const abortWith = (failure: RunFailure) => {
    if (!signal.aborted) controller.abort(failure);
  };
  // Armed while the relay waits on the backend: before the first byte, then between slices
  // whenever the sink is not holding the body back.
  const firstByteTimer: NodeJS.Timeout = setTimeout(
    () =>
      abortWith(
        new RunFailure(RunErrorCode.FIRST_BYTE_TIMEOUT, `no first byte within ${request.firstByteTimeoutMs} ms`),
      ),
    request.firstByteTimeoutMs,
  );
  let idleTimer: NodeJS.Timeout | undefined;
  let held = false;
  let started = false;
  let status = 0;
  let bytes = 0;
  let usage: UsageScanner | undefined;
  const onSlice = (slice: Uint8Array): Promise<void> | undefined => {
    if (bytes === 0) {
      clearTimeout(firstByteTimer);
      hooks.onFirstByte?.(status);
      idleTimer = setTimeout(() => {
        if (!held) abortWith(new RunFailure(RunErrorCode.IDLE_TIMEOUT, `no body byte for ${request.idleTimeoutMs} ms`));
      }, request.idleTimeoutMs);
    } else {
      idleTimer!.refresh();
    }
    bytes += slice.length;
    hooks.onBytes?.(bytes);
    usage!.push(slice);
    const full = sink(bodyFrame(runId, slice));
    if (full === undefined) return undefined;
    held = true;
    return full.then(() => {
      held = false;
      idleTimer?.refresh();
    });
  };
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
    status = response.status;
    usage = new UsageScanner(usageBodyKindOf(response.headers['content-type']));
    const full = sink(responseStartFrame(runId, response.status, response.headers));
    if (full !== undefined) await full;
    await readBody(response.body, onSlice);
    if (signal.aborted) throw signal.reason;
    const tokens = usage.finish();
    if (tokens !== undefined) {
      const pending = sink(usageFrame(runId, tokens));
      if (pending !== undefined) await pending;
    }
    hooks.onEnd?.({ status: response.status, bytes, usage: tokens });
    sink(endFrame(runId));
  } catch (error) {
    const failure = toRunFailure(error, signal, started);
    // Whatever ended the run, the backend request must stop now: an unconsumed body would
    // otherwise keep the model generating.
    abortWith(failure);
    hooks.onFailure?.(failure, bytes, error);
    sink(errorFrame(runId, failure.code, failure.message));
  } finally {
    clearTimeout(firstByteTimer);
    clearTimeout(idleTimer);
  }
}

/**
 * Reads a body to its end, handing each slice to `onSlice` as it arrives; a returned promise
 * pauses the body until it settles. Rejects with the body's error (an aborted request's body
 * errors too). A Node `Readable` (undici's body) is read through its 'data' events, and what
 * piled up in it while it was paused (up to its high-water mark) leaves as one slice on release,
 * not chunk by chunk: relaying such a backlog as a frame per socket chunk, with 64 streams held
 * back by slow clients, multiplied the agent's writes and left it at 3–4× its memory. Any other
 * async iterable (the embedded backend's) is read with `for await`.
 */
function readBody(
  body: AsyncIterable<Uint8Array>,
  onSlice: (slice: Uint8Array) => Promise<void> | undefined,
): Promise<void> {
  if (!(body instanceof Readable)) return iterateBody(body, onSlice);
  return new Promise<void>((resolve, reject) => {
    let held = false;
    const release = () => {
      held = false;
      // `read()` on a paused stream hands its whole buffer to the 'data' listener at once.
      if (body.readableLength > 0) body.read();
      if (!held) body.resume();
    };
    body.on('data', (slice: Uint8Array) => {
      const full = onSlice(slice);
      if (full === undefined) return;
      held = true;
      body.pause();
      void full.then(release);
    });
    finished(body, (error) => (error === undefined || error === null ? resolve() : reject(error)));
  });
}

async function iterateBody(
  body: AsyncIterable<Uint8Array>,
  onSlice: (slice: Uint8Array) => Promise<void> | undefined,
): Promise<void> {
  for await (const slice of body) {
    const full = onSlice(slice);
    if (full !== undefined) await full;
  }
}
