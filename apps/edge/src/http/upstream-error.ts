/**
 * Reads a backend's non-2xx answer off its run (bounded) and turns it into an IopError, so the client gets the error
 * in its own dialect; the body is read by `@iop/backend-wire`'s `upstreamErrorOf`.
 */
import { MAX_ERROR_BODY_BYTES, upstreamErrorOf } from '@iop/backend-wire';
import type { IopError } from '@iop/core';
import type { RunStream } from '../pool/run-stream.js';
import { FrameKind } from '../tunnel/run-registry.js';

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
  return upstreamErrorOf(status, Buffer.concat(parts), retryAfter);
}
