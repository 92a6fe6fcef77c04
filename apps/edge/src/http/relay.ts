/**
 * Path A, passthrough: the backend already speaks the client's dialect (OpenAI Chat), so its bytes
 * are relayed as they arrive — each BODY frame written at once, nothing re-encoded, nothing
 * buffered whole for streams. Backpressure: when the client's socket is full the relay stops
 * taking frames, which stalls the run's HTTP/2 stream and, through the agent, the backend.
 *
 * A stream that ends without `data: [DONE]` (cut upstream) or with an ERROR frame gets an
 * in-band OpenAI error event, never a silent truncation (PROTOCOLS A.5); so does a stream the
 * request's deadline stopped, and one whose client read nothing for `writeStallTimeoutMs` (the
 * run is cancelled at once, releasing the backend slot).
 */
import type { Response } from 'express';
import { IopError, sseJson } from '@iop/core';
import type { ProviderTunnelFrame } from '@iop/proto';
import { FrameKind } from '../tunnel/run-registry.js';
import type { PoolRun } from '../pool/pool-provider.js';
import type { ModelRewriter } from './model-rewrite.js';
import { headerValue } from './header-value.js';
import { SseGuard } from './sse-guard.js';
import { runFailure, type WholeAnswer } from './open-run.js';
import { toOpenAIErrorBody } from '../dialects.js';
import type { UsageRecorder } from './usage-recorder.js';
import { drained, endStalled } from './drained.js';
import { stopError } from './request-deadline.js';


export interface RelayOptions {
  stream: boolean;
  usage: UsageRecorder;
  /** Called once when the first body byte goes to the client (TTFT). */
  onFirstByte?: () => void;
  /** The frame `openRun` already took after RESPONSE_START; relayed first. */
  first?: ProviderTunnelFrame | undefined;
  /** Rewrites the served model id to the client's name (model groups and aliases). */
  rewriter?: ModelRewriter | undefined;
  /** The non-stream answer `openRun` read whole and checked (`wholeBody`); required when not streaming. */
  answer?: WholeAnswer | undefined;
  /** Aborted when the request is stopped (deadline, client gone); its IopError reason is the in-band error. */
  signal?: AbortSignal | undefined;
  /** A client that takes nothing for this long ends the stream: run cancelled, in-band error, ms. */
  writeStallTimeoutMs?: number | undefined;
}

/** Response headers worth passing on from the backend. */
function contentType(start: ProviderTunnelFrame, stream: boolean): string {
  return start.headers['content-type'] ?? (stream ? 'text/event-stream' : 'application/json');
}

/**
 * Relays a run to the client. Returns the failure that ended a stream early (in-band error sent),
 * or undefined when the answer was complete.
 */
export async function relay(handle: PoolRun, start: ProviderTunnelFrame, res: Response, options: RelayOptions): Promise<IopError | undefined> {
  res.status(start.status);
  res.setHeader('content-type', headerValue(contentType(start, options.stream)));
  if (options.stream) return relayStream(handle, res, options);
  // Non-stream: openRun read it whole (a broken body was a failed attempt, retried).
  const { answer } = options;
  if (answer === undefined) throw new IopError('internal', 'a non-stream relay needs the answer openRun read');
  options.usage.record(answer.usage);
  if (options.rewriter === undefined) res.end(answer.body);
  else res.end(Buffer.concat([options.rewriter.push(answer.body), options.rewriter.end()]));
  return undefined;
}

async function relayStream(handle: PoolRun, res: Response, options: RelayOptions): Promise<IopError | undefined> {
  res.setHeader('cache-control', 'no-cache');
  res.flushHeaders();
  let failure: IopError | undefined;
  let first = true;
  const { rewriter } = options;
  const guard = new SseGuard();
  for (let frame = options.first; ; ) {
    if (frame === undefined) {
      const next = await handle.frames.next();
      if (next.done === true) break;
      frame = next.value;
    }
    if (frame.kind === FrameKind.BODY) {
      if (first) {
        first = false;
        options.onFirstByte?.();
      }
      const checked = guard.push(frame.body);
      const bytes = rewriter === undefined ? checked.safe : rewriter.push(checked.safe);
      if (bytes.length > 0 && !res.write(bytes) && !(await drained(res, options.writeStallTimeoutMs))) {
        failure = new IopError('timeout', `the client read nothing for ${options.writeStallTimeoutMs} ms; the stream was ended`);
        handle.cancel('client stopped reading');
        endStalled(res, sseJson(toOpenAIErrorBody(failure)), options.writeStallTimeoutMs ?? 0);
        return failure;
      }
      if (checked.malformed) {
        failure = new IopError('upstream_error', 'upstream failure: the backend sent a malformed stream chunk');
        handle.cancel('malformed stream chunk');
        break;
      }
    } else if (frame.kind === FrameKind.USAGE) {
      options.usage.record(frame.usage);
    } else if (frame.kind === FrameKind.ERROR) {
      failure = runFailure(frame);
    }
    frame = undefined;
  }
  // The held last line goes out only when it is the terminator itself (an unterminated `data: [DONE]`).
  if (failure === undefined && options.signal?.aborted === true) failure = stopError(options.signal, new IopError('upstream_error', 'the request was stopped'));
  let partial = failure === undefined ? guard.end() : undefined;
  if (failure === undefined && !guard.sawDone) {
    failure = runFailure({ errorCode: 'backend_reset', errorMessage: 'the upstream stream ended before [DONE]' } as ProviderTunnelFrame);
    partial = undefined;
  }
  if (partial !== undefined && !res.destroyed) res.write(rewriter === undefined ? partial : rewriter.push(partial));
  const held = rewriter?.end();
  if (held !== undefined && held.length > 0 && !res.destroyed) res.write(held);
  if (failure !== undefined && !res.destroyed) res.write(sseJson(toOpenAIErrorBody(failure)));
  res.end();
  return failure;
}
