/**
 * Path B, normalized: the backend's chat SSE is decoded into StreamEvents and encoded in the
 * client's dialect (Anthropic Messages, OpenAI Responses, or Chat when the gate must see content).
 * Streams are written event by event as they are decoded; non-stream answers are built from the
 * complete event list.
 */
import type { Response } from 'express';
import { IopError, type Dialect, type EncodeContext, type StreamEvent } from '@iop/core';
import { FrameKind, type RunHandle } from '../tunnel/run-registry.js';
import { createChatStreamDecoder, type ToolIdMap } from '../dialects.js';
import { runFailure } from './open-run.js';
import { drained } from './drained.js';
import type { UsageRecorder } from './usage-recorder.js';

export interface NormalizedOptions {
  dialect: Dialect;
  context: EncodeContext;
  stream: boolean;
  usage: UsageRecorder;
  toolIds: ToolIdMap;
  /** Called once with the first byte written to the client (TTFT). */
  onFirstByte?: () => void;
  /** Called with the final response object when the dialect's encoder exposes one (Responses store). */
  onResult?: (result: unknown) => void;
}

/** Decodes a run's frames into events, in order, calling `onEvent` for each; returns when the run ends. */
export async function decodeRun(handle: RunHandle, onEvent: (event: StreamEvent) => void, afterChunk?: () => Promise<void> | undefined): Promise<void> {
  const decoder = createChatStreamDecoder(onEvent);
  for await (const frame of handle.frames) {
    if (frame.kind === FrameKind.BODY) {
      decoder.push(frame.body);
      const pending = afterChunk?.();
      if (pending !== undefined) await pending;
    } else if (frame.kind === FrameKind.ERROR) {
      const error = runFailure(frame);
      onEvent({ type: 'error', code: error.code, message: error.message, status: error.status });
      return;
    }
  }
  decoder.end();
}

export async function writeNormalized(handle: RunHandle, res: Response, options: NormalizedOptions): Promise<void> {
  const { dialect, context, usage, toolIds } = options;
  const restore = (event: StreamEvent): StreamEvent => {
    if (event.type === 'usage') usage.recordHub(event.usage);
    if (event.type === 'tool-call-delta' && event.id !== undefined) return { ...event, id: toolIds.toClient(event.id) };
    return event;
  };
  if (!options.stream) {
    const events: StreamEvent[] = [];
    await decodeRun(handle, (event) => events.push(restore(event)));
    const body = dialect.encodeResponse(events, context);
    options.onResult?.(body);
    res.status(200).json(body);
    return;
  }
  const encoder = dialect.createStreamEncoder(context);
  let backpressure = false;
  let started = false;
  const write = (text: string) => {
    if (text.length === 0 || res.destroyed) return;
    if (!started) {
      started = true;
      options.onFirstByte?.();
    }
    if (!res.write(text)) backpressure = true;
  };
  res.status(200);
  res.setHeader('content-type', 'text/event-stream; charset=utf-8');
  res.setHeader('cache-control', 'no-cache');
  res.flushHeaders();
  await decodeRun(
    handle,
    (event) => write(encoder.push(restore(event))),
    () => {
      if (!backpressure) return undefined;
      backpressure = false;
      return drained(res);
    },
  );
  write(encoder.end());
  const result = (encoder as { result?: () => unknown }).result?.();
  if (result !== undefined) options.onResult?.(result);
  res.end();
}

/** For callers that need an IopError from an error event. */
export function errorOf(event: Extract<StreamEvent, { type: 'error' }>): IopError {
  return new IopError(event.code, event.message, { status: event.status });
}
