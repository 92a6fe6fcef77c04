import type { Response } from 'express';

/**
 * Resolves when the response can take more data ('drain') or is gone ('close'): a writer that
 * waits on it never hangs on a client that disconnected while its socket buffer was full.
 */
export function drained(res: Response): Promise<void> {
  if (res.destroyed || res.writableEnded) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}
