/**
 * The edge's `ResponseStore`: the SQLite store run in a worker thread (sqlite-worker.ts), so
 * encoding a record and writing it — tens of MB for a large input — never stalls the event loop
 * (`/healthz`, streams in flight). The calling thread only walks the record once (`shareRecord`:
 * each long string kept once) and structured-clones that into the worker (a copy, no encoding). Calls are answered in order of completion; an error the worker
 * reports comes back as an IopError with its code (e.g. `request_too_large`), anything else as an
 * Error. If the worker dies, pending and later calls fail with IopError `internal`.
 */
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { IopError, type ErrorCode } from '@iop/core';
import { shareRecord } from './record-codec.js';
import type { SqliteStoreOptions } from './sqlite-store.js';
import type { StoreAnswer, StoreMethod, StoreReady } from './sqlite-worker.js';
import type { InputItemsPage, InputItemsQuery, ResponseStore, StoredResponse } from './store.js';

interface Pending {
  resolve(value: unknown): void;
  reject(error: Error): void;
}

export class WorkerResponseStore implements ResponseStore {
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;
  private failure: Error | undefined;

  private constructor(private readonly worker: Worker) {
    worker.on('message', (answer: StoreAnswer) => {
      const pending = this.pending.get(answer.id);
      if (pending === undefined) return;
      this.pending.delete(answer.id);
      if ('error' in answer) {
        const { code, message } = answer.error;
        pending.reject(code === undefined ? new Error(message) : new IopError(code as ErrorCode, message));
      } else pending.resolve(answer.value);
    });
    const fail = (error: Error) => {
      this.failure ??= new IopError('internal', `the Responses store worker stopped: ${error.message}`);
      for (const pending of this.pending.values()) pending.reject(this.failure);
      this.pending.clear();
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`exit code ${code}`)));
  }

  /**
   * Starts the worker and opens the database in it.
   * @throws Error when the database cannot be opened (the message names why), as the constructor of SqliteResponseStore does.
   */
  static async open(options: SqliteStoreOptions): Promise<WorkerResponseStore> {
    const worker = new Worker(path.join(__dirname, 'sqlite-worker.js'), { workerData: options });
    const ready = await new Promise<StoreReady>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    if (!ready.ready) throw new Error(ready.message);
    // The store alone does not keep the process alive (the servers do); `close()` ends it.
    worker.unref();
    return new WorkerResponseStore(worker);
  }

  put(record: StoredResponse, owner: string): Promise<void> {
    // One walk here; each long string crosses once (the input appears twice in a record).
    return this.call('putShared', [record.id, shareRecord(record), owner]) as Promise<void>;
  }

  get(id: string, owner: string): Promise<StoredResponse | undefined> {
    return this.call('get', [id, owner]) as Promise<StoredResponse | undefined>;
  }

  delete(id: string, owner: string): Promise<boolean> {
    return this.call('delete', [id, owner]) as Promise<boolean>;
  }

  inputItems(id: string, owner: string, query?: InputItemsQuery): Promise<InputItemsPage | undefined> {
    return this.call('inputItems', [id, owner, query]) as Promise<InputItemsPage | undefined>;
  }

  async close(): Promise<void> {
    if (this.failure === undefined) await this.call('close', []).catch(() => undefined);
    await this.worker.terminate();
  }

  private call(method: StoreMethod, args: unknown[]): Promise<unknown> {
    if (this.failure !== undefined) return Promise.reject(this.failure);
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.worker.postMessage({ id, method, args });
    });
  }
}
