/**
 * Path A, passthrough: the backend already speaks the client's dialect (OpenAI Chat), so its bytes
 * are relayed as they arrive — each BODY frame written at once, nothing re-encoded, nothing
 * buffered whole for streams. Backpressure: when the client's socket is full the relay stops
 * taking frames, which stalls the run's HTTP/2 stream and, through the agent, the backend.
 *
 * A stream that ends without `data: [DONE]` (cut upstream) or with an ERROR frame gets an
 * in-band OpenAI error event, never a silent truncation (PROTOCOLS A.5).
 */
import type { Response } from 'express';
import { sseJson, type IopError } from '@iop/core';
import type { ProviderTunnelFrame } from '@iop/proto';
import { FrameKind, type RunHandle } from '../tunnel/run-registry.js';
import { runFailure } from './open-run.js';
import { toOpenAIErrorBody } from '../dialects.js';
import type { UsageRecorder } from './usage-recorder.js';
import { drained } from './drained.js';

const DONE_MARKER = Buffer.from('[DONE]');
const TAIL_BYTES = 32;

export interface RelayOptions {
  stream: boolean;
  usage: UsageRecorder;
  /** Called once when the first body byte goes to the client (TTFT). */
  onFirstByte?: () => void;
}

/** Response headers worth passing on from the backend. */
function contentType(start: ProviderTunnelFrame, stream: boolean): string {
  return start.headers['content-type'] ?? (stream ? 'text/event-stream' : 'application/json');
}

export async function relay(handle: RunHandle, start: ProviderTunnelFrame, res: Response, options: RelayOptions): Promise<void> {
  res.status(start.status);
  res.setHeader('content-type', contentType(start, options.stream));
  if (options.stream) return relayStream(handle, res, options);
  // Non-stream: small, and buffering it lets a failure still become a clean HTTP error.
  const parts: Uint8Array[] = [];
  for await (const frame of handle.frames) {
    if (frame.kind === FrameKind.BODY) parts.push(frame.body);
    else if (frame.kind === FrameKind.USAGE) options.usage.record(frame.usage);
    else if (frame.kind === FrameKind.ERROR) throw runFailure(frame);
  }
  res.end(parts.length === 1 ? parts[0] : Buffer.concat(parts));
}

async function relayStream(handle: RunHandle, res: Response, options: RelayOptions): Promise<void> {
  res.setHeader('cache-control', 'no-cache');
  res.flushHeaders();
  let tail: Uint8Array = new Uint8Array(0);
  let failure: IopError | undefined;
  let first = true;
  for await (const frame of handle.frames) {
    if (frame.kind === FrameKind.BODY) {
      if (first) {
        first = false;
        options.onFirstByte?.();
      }
      tail = frame.body.length >= TAIL_BYTES ? frame.body.subarray(frame.body.length - TAIL_BYTES) : Buffer.concat([tail, frame.body]).subarray(-TAIL_BYTES);
      if (!res.write(frame.body)) await drained(res);
    } else if (frame.kind === FrameKind.USAGE) {
      options.usage.record(frame.usage);
    } else if (frame.kind === FrameKind.ERROR) {
      failure = runFailure(frame);
    }
  }
  if (failure === undefined && Buffer.from(tail.buffer, tail.byteOffset, tail.byteLength).indexOf(DONE_MARKER) === -1) {
    failure = runFailure({ errorCode: 'backend_reset', errorMessage: 'the upstream stream ended before [DONE]' } as ProviderTunnelFrame);
  }
  if (failure !== undefined && !res.destroyed) res.write(sseJson(toOpenAIErrorBody(failure)));
  res.end();
}
