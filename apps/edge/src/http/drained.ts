import type { Response } from 'express';

/**
 * Resolves when the response can take more data ('drain') or is gone ('close'): a writer that
 * waits on it never hangs on a client that disconnected while its socket buffer was full.
 * With `stallTimeoutMs` it resolves `false` when the client took nothing for that long (it
 * stopped reading: config `writeStallTimeoutMs`), else `true`.
 */
export function drained(res: Response, stallTimeoutMs?: number): Promise<boolean> {
  if (res.destroyed || res.writableEnded) return Promise.resolve(true);
  return new Promise((resolve) => {
    let timer: NodeJS.Timeout | undefined;
    const done = (ok: boolean) => {
      clearTimeout(timer);
      res.off('drain', onDrain);
      res.off('close', onDrain);
      resolve(ok);
    };
    const onDrain = () => done(true);
    res.on('drain', onDrain);
    res.on('close', onDrain);
    if (stallTimeoutMs !== undefined) timer = setTimeout(() => done(false), stallTimeoutMs);
  });
}

/**
 * Ends a response whose client stopped reading: the final bytes (an in-band error) are queued
 * with `end`, and the socket is destroyed if they have not left after another `graceMs`, so
 * neither the connection nor its buffer is held for ever.
 */
export function endStalled(res: Response, last: string | Uint8Array | undefined, graceMs: number): void {
  if (res.destroyed) return;
  if (last === undefined) res.end();
  else res.end(last);
  const timer = setTimeout(() => {
    if (!res.writableFinished) res.destroy();
  }, graceMs);
  timer.unref();
  res.once('close', () => clearTimeout(timer));
}
