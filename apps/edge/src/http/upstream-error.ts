/**
 * Reads a backend's non-2xx answer (bounded) and turns it into an IopError, so the client gets
 * the error in its own dialect (vLLM's `{type:"BadRequestError", code:400}` never reaches it).
 */
import { IopError } from '@iop/core';
import type { RunStream } from '../pool/run-stream.js';
import { FrameKind } from '../tunnel/run-registry.js';
import { normalizeUpstreamError } from '../dialects.js';

/** At most this much of an error body is read, bytes. */
const MAX_ERROR_BODY_BYTES = 64 * 1024;

export async function readUpstreamError(
  handle: Pick<RunStream, 'frames'>,
  status: number,
  retryAfter: string | undefined,
): Promise<IopError> {
  const parts: Uint8Array[] = [];
  let size = 0;
  for await (const frame of handle.frames) {
    if (frame.kind !== FrameKind.BODY) continue;
    if (size < MAX_ERROR_BODY_BYTES) parts.push(frame.body);
    size += frame.body.length;
  }
  let body: unknown;
  const text = Buffer.concat(parts).toString('utf8').slice(0, MAX_ERROR_BODY_BYTES);
  try {
    body = JSON.parse(text);
  } catch {
    body = text;
  }
  const error = normalizeUpstreamError(status, body);
  const seconds = retryAfter === undefined ? undefined : Number(retryAfter);
  if (seconds !== undefined && Number.isFinite(seconds) && error.retryAfterSeconds === undefined) {
    return new IopError(error.code, error.message, {
      retryAfterSeconds: seconds,
      ...(error.param === undefined ? {} : { param: error.param }),
    });
  }
  return error;
}
