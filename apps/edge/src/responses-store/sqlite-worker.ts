/**
 * Worker-thread entry of `WorkerResponseStore`: owns the `SqliteResponseStore` (better-sqlite3 is
 * synchronous; here its statements and the record encoding block this thread, not the edge's event
 * loop). It first answers `StoreReady`; then requests: `{ id, method, args }` for the `ResponseStore` methods
 * (`putShared` for `put`: the record arrives as a `shareRecord` tree); answers: `{ id, value }`
 * or `{ id, error }` with the error's code (an IopError's) and message.
 */
import { parentPort, workerData } from 'node:worker_threads';
// Only the error class: this thread is its own isolate and loads nothing it does not run
// (the whole of @iop/core would add config schemas, the logger and tracing to its heap).
import { IopError } from '@iop/core/errors';
import { SqliteResponseStore, type SqliteStoreOptions } from './sqlite-store.js';

export type StoreMethod = 'putShared' | 'get' | 'delete' | 'inputItems' | 'close';
export interface StoreRequest {
  id: number;
  method: StoreMethod;
  args: unknown[];
}
export type StoreAnswer =
  { id: number; value: unknown } | { id: number; error: { code: string | undefined; message: string } };
/** The first message: the store opened (or could not: the worker then exits). */
export type StoreReady = { ready: true } | { ready: false; message: string };

if (parentPort !== null) {
  const port = parentPort;
  let store: SqliteResponseStore;
  try {
    store = new SqliteResponseStore(workerData as SqliteStoreOptions);
  } catch (error) {
    port.postMessage({
      ready: false,
      message: error instanceof Error ? error.message : String(error),
    } satisfies StoreReady);
    process.exit(1);
  }
  port.postMessage({ ready: true } satisfies StoreReady);
  port.on('message', (request: StoreRequest) => {
    let call: Promise<unknown>;
    try {
      call = Promise.resolve((store[request.method] as (...args: unknown[]) => unknown).apply(store, request.args));
    } catch (error) {
      call = Promise.reject(error);
    }
    call.then(
      (value) => port.postMessage({ id: request.id, value } satisfies StoreAnswer),
      (error: unknown) =>
        port.postMessage({
          id: request.id,
          error: {
            code: error instanceof IopError ? error.code : undefined,
            message: error instanceof Error ? error.message : String(error),
          },
        } satisfies StoreAnswer),
    );
  });
}
