/**
 * Path A, passthrough: the backend already speaks the client's dialect (OpenAI Chat), so its bytes
 * are relayed as they arrive — each BODY frame written at once, nothing re-encoded, nothing
 * buffered whole for streams. Backpressure: when the client's socket is full the relay stops
 * taking frames, which stalls the run's HTTP/2 stream and, through the agent, the backend.
 *
 * Streams go through `SseGuard`, which makes the backend's framing spec-conformant (multi-line
 * data, one usage chunk, error chunks) at the cost of a few native byte searches per chunk. A
 * stream that ends without `data: [DONE]` before its finish reason (cut upstream), with a backend
 * error chunk or with an ERROR frame gets an in-band OpenAI error event, never a silent
 * truncation (docs/protocols.md "Chat errors"); one that delivered its finish reason is complete, `[DONE]` or not.
 * So does a stream the request's deadline stopped, and one whose client read nothing for
 * `writeStallTimeoutMs` (the run is cancelled at once, releasing the backend slot).
 */
import type { Response } from 'express';
import { IopError, sseJson } from '@iop/core';
import { RunErrorCode, type ProviderTunnelFrame } from '@iop/proto';
import { deliveredAnswer, finishReasonsOf } from '@iop/backend-wire';
import { FrameKind } from '../tunnel/run-registry.js';
import type { RunStream } from '../pool/run-stream.js';
import type { ModelRewriter } from '../http/model-rewrite.js';
import { headerValue } from '../http/header-value.js';
import { SseGuard } from '../http/sse-guard.js';
import { runFailure, type WholeAnswer } from '../attempt/open-run.js';
import { toOpenAIErrorBody } from '../dialects.js';
import type { UsageRecorder } from '../attempt/usage-recorder.js';
import { drained, endStalled } from '../http/drained.js';
import { stopError } from '../attempt/request-deadline.js';
import type { RequestRuns } from '../attempt/request-runs.js';

export interface RelayOptions {
  stream: boolean;
  /** The request's runs: the relayed run is cancelled through it (a failed stream, a client that stopped reading). */
  runs: RequestRuns;
  /** The client asked for `stream_options.include_usage`: exactly one `choices: []` usage chunk. */
  includeUsage?: boolean;
  /** Choices a complete stream finishes (default 1; legacy completions: prompts × `n`). */
  choices?: number | undefined;
  usage: UsageRecorder;
  /** Called once when the first body byte goes to the client (TTFT). */
  onFirstByte?: () => void;
  /** The frame `openRun` already took after RESPONSE_START; relayed first. */
  first?: ProviderTunnelFrame | undefined;
  /** Rewrites the served model id to the client's name (model groups and aliases). */
  rewriter?: ModelRewriter | undefined;
  /** The non-stream answer `openRun` read whole and checked (`wholeBody`); required when not streaming. */
  answer?: WholeAnswer | undefined;
  /** Rewrites the whole non-stream answer for the client (embeddings as base64, rerank order); @throws IopError. */
  finishAnswer?: ((body: Buffer) => Buffer) | undefined;
  /** Aborted when the request is stopped (deadline, client gone); its IopError reason is the in-band error. */
  signal?: AbortSignal | undefined;
  /** A client that takes nothing for this long ends the stream: run cancelled, in-band error, ms. */
  writeStallTimeoutMs?: number | undefined;
  /**
   * Receives the answer's `finish_reason` values (a stream's from its guard; a non-stream body is parsed for them only
   * when given).
   */
  finishReasons?: string[] | undefined;
}

const WARNINGS_HEADER = 'x-iop-warnings';

/** Response headers worth passing on from the backend. */
function contentType(start: ProviderTunnelFrame, stream: boolean): string {
  return start.headers['content-type'] ?? (stream ? 'text/event-stream' : 'application/json');
}

/**
 * Relays a run to the client. Returns the failure that ended a stream early (in-band error sent),
 * or undefined when the answer was complete.
 */
export async function relay(
  handle: RunStream,
  start: ProviderTunnelFrame,
  res: Response,
  options: RelayOptions,
): Promise<IopError | undefined> {
  res.status(start.status);
  res.setHeader('content-type', headerValue(contentType(start, options.stream)));
  // What the backend could not honour (the embedded backend: n > 1, logprobs) reaches the client.
  const warnings = start.headers[WARNINGS_HEADER];
  if (warnings !== undefined && warnings !== '') res.setHeader(WARNINGS_HEADER, headerValue(warnings));
  if (options.stream) return relayStream(handle, res, options);
  // Non-stream: openRun read it whole (a broken body was a failed attempt, retried).
  const { answer } = options;
  if (answer === undefined) throw new IopError('internal', 'a non-stream relay needs the answer openRun read');
  options.usage.record(answer.usage);
  // A JSON API's own rewrite (embeddings encoding, rerank order), else Chat's finish-reason rule.
  const body =
    options.finishAnswer === undefined
      ? deliveredAnswer(answer.body)
      : start.status >= 300
        ? answer.body
        : options.finishAnswer(answer.body);
  if (options.finishReasons !== undefined) options.finishReasons.push(...finishReasonsOfBody(body));
  if (options.rewriter === undefined) res.end(body);
  else res.end(Buffer.concat([options.rewriter.push(body), options.rewriter.end()]));
  return undefined;
}

/**
 * What ends a relayed stream in its first body frame, if anything: a malformed chunk or the
 * backend's error chunk (`SseGuard`'s rules), for `openRun`'s `checkFirst`. A throwaway guard
 * scans the frame once (a few hundred bytes, once per request); an event the frame cuts short
 * passes here and is judged by the relay's own guard.
 */
export function firstChunkFailure(body: Uint8Array): IopError | undefined {
  return new SseGuard({ includeUsage: false }).push(body).failure;
}

/** The `finish_reason` values of a whole Chat Completions body (none when it does not parse). */
function finishReasonsOfBody(body: Buffer): string[] {
  try {
    return finishReasonsOf(JSON.parse(body.toString('utf8')));
  } catch {
    return [];
  }
}

async function relayStream(handle: RunStream, res: Response, options: RelayOptions): Promise<IopError | undefined> {
  const guard = new SseGuard({ includeUsage: options.includeUsage === true, choices: options.choices });
  try {
    return await relayGuarded(handle, res, options, guard);
  } finally {
    options.usage.countGenerated(guard.generatedChunks);
    options.finishReasons?.push(...guard.finishReasons);
    // Usage the agent's scan could not see (an event whose data spans several lines) is still the backend's own count.
    if (options.usage.value === undefined && guard.parsedUsage !== undefined)
      options.usage.recordHub(guard.parsedUsage);
  }
}

/**
 * The relay's writes to the client: `send` returns true when the socket took the bytes, else a promise of whether
 * the client read them within `writeStallTimeoutMs` (no promise per token while the client keeps up); `stalled` ends
 * the stream of a client that stopped reading: the run is cancelled (its backend slot released), an in-band error.
 */
function clientWriter(
  handle: RunStream,
  res: Response,
  options: RelayOptions,
): { send: (bytes: Buffer) => boolean | Promise<boolean>; stalled: () => IopError } {
  const { rewriter } = options;
  return {
    send: (bytes) => {
      if (bytes.length === 0 || res.destroyed) return true;
      return (
        res.write(rewriter === undefined ? bytes : rewriter.push(bytes)) || drained(res, options.writeStallTimeoutMs)
      );
    },
    stalled: () => {
      const failure = new IopError(
        'timeout',
        `the client read nothing for ${options.writeStallTimeoutMs} ms; the stream was ended`,
      );
      options.runs.cancel(handle, 'client stopped reading');
      endStalled(res, sseJson(toOpenAIErrorBody(failure)), options.writeStallTimeoutMs ?? 0);
      return failure;
    },
  };
}

async function relayGuarded(
  handle: RunStream,
  res: Response,
  options: RelayOptions,
  guard: SseGuard,
): Promise<IopError | undefined> {
  res.setHeader('cache-control', 'no-cache');
  // openRun hands over the first frame with the run: when it is body bytes, the headers leave with
  // them in one write (a separate header write per stream was ~10 % of the edge's CPU at 64
  // concurrent streams); otherwise they go now, so the client sees the answer start.
  if (options.first?.kind !== FrameKind.BODY) res.flushHeaders();
  let failure: IopError | undefined;
  let first = true;
  const { rewriter } = options;
  /** The stream itself failed (malformed or error chunk), as opposed to an ERROR frame of the run. */
  let streamFailed = false;
  const { send, stalled } = clientWriter(handle, res, options);
  for (let frame = options.first; ;) {
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
      const sent = send(checked.safe);
      if (sent !== true && !(await sent)) return stalled();
      if (checked.failure !== undefined) {
        failure = checked.failure;
        streamFailed = true;
        options.runs.cancel(handle, failure.message);
        break;
      }
    } else if (frame.kind === FrameKind.USAGE) {
      options.usage.record(frame.usage);
    } else if (frame.kind === FrameKind.ERROR) {
      failure = runFailure(frame);
    }
    frame = undefined;
  }
  // A stream the request's deadline (or the client) stopped is not complete unless its finish arrived.
  if (options.signal?.aborted === true && !guard.sawFinish) {
    failure = stopError(options.signal, failure ?? new IopError('upstream_error', 'the request was stopped'));
    streamFailed = true;
  }
  // The end of the backend's stream; an ERROR frame after the finish reason leaves the answer whole.
  if (!streamFailed && (failure === undefined || guard.sawFinish)) {
    const ended = guard.end();
    const sent = send(ended.safe);
    if (sent !== true && !(await sent)) return stalled();
    if (ended.failure !== undefined) failure = ended.failure;
    else if (ended.complete) failure = undefined;
    else
      failure ??= runFailure({
        errorCode: RunErrorCode.BACKEND_RESET,
        errorMessage: 'the upstream stream ended before [DONE]',
      });
  }
  const held = rewriter?.end();
  if (held !== undefined && held.length > 0 && !res.destroyed) res.write(held);
  if (failure !== undefined && !res.destroyed) res.write(sseJson(toOpenAIErrorBody(failure)));
  res.end();
  return failure;
}
