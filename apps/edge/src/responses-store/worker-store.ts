/**
 * The edge's `ResponseStore`: the SQLite store run in a worker thread (sqlite-worker.ts), so
 * encoding a record and writing it — tens of MB for a large input — never stalls the event loop
 * (`/healthz`, streams in flight). The calling thread only walks the record once (`shareRecord`:
 * each long string kept once) and structured-clones that into the worker (a copy, no encoding).
 * Calls are answered in order of completion; an error the worker reports comes back as an
 * IopError with its code (e.g. `request_too_large`), anything else as an Error.
 *
 * The worker starts with the first call (~10 MiB of memory and a thread an edge that serves no
 * stored Responses never pays), and again with the next call after it died: the calls pending on
 * a worker that stopped fail with IopError `internal`, later ones go to a new worker. A database
 * that cannot be opened fails the call that started the worker with IopError `internal` naming
 * why, and the calls of the next `restartDelayMs` with the same error, without a new thread (the
 * edge opened `state.sqlite` in the same directory at start, so the directory was usable then).
 */
import { once } from 'node:events';
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
  /** The worker the call went to (its death fails only its own calls). */
  worker: Worker;
}

export class WorkerResponseStore implements ResponseStore {
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;
  /** The worker serving calls (or starting to); undefined before the first call and after it died. */
  private worker: Promise<Worker> | undefined;
  /** The started worker that has not stopped. */
  private live: Worker | undefined;
  private closed = false;
  private startCount = 0;

  /**
   * When the last start failed (ms, `performance.now()`) and why; calls until `restartDelayMs` later fail with it at
   * once.
   */
  private lastStartFailure: { at: number; error: unknown } | undefined;

  /**
   * No thread yet: the worker starts with the first call.
   * @param restartDelayMs after a start that failed (the database cannot be opened), calls fail at
   *   once with that error for this long before one starts a worker again, ms: a broken data
   *   directory costs one thread start per interval, not one per request.
   */
  constructor(
    private readonly options: SqliteStoreOptions,
    private readonly restartDelayMs = 5_000,
  ) {}

  /** Workers started so far (0 until the first call; more than 1 after a worker died). */
  get workersStarted(): number {
    return this.startCount;
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
    this.closed = true;
    const running = await this.worker?.catch(() => undefined);
    if (running === undefined) return;
    await this.send(running, 'close', []).catch(() => undefined);
    await running.terminate();
  }

  private async call(method: StoreMethod, args: unknown[]): Promise<unknown> {
    if (this.closed) throw new IopError('internal', 'the Responses store is closed');
    const failed = this.lastStartFailure;
    if (this.worker === undefined && failed !== undefined && performance.now() - failed.at < this.restartDelayMs)
      throw failed.error;
    this.worker ??= this.start().then(
      (worker) => {
        this.lastStartFailure = undefined;
        return worker;
      },
      (error: unknown) => {
        this.worker = undefined;
        this.lastStartFailure = { at: performance.now(), error };
        throw error;
      },
    );
    return this.send(await this.worker, method, args);
  }

  private send(worker: Worker, method: StoreMethod, args: unknown[]): Promise<unknown> {
    // It stopped between the start and this call: a message to it would never be answered.
    if (worker !== this.live)
      return Promise.reject(
        new IopError('internal', 'the Responses store worker stopped; the next call starts a new one'),
      );
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, worker });
      worker.postMessage({ id, method, args });
    });
  }

  /** Starts a worker and opens the database in it. @throws IopError `internal` when the database cannot be opened. */
  private async start(): Promise<Worker> {
    this.startCount++;
    const worker = new Worker(path.join(__dirname, 'sqlite-worker.js'), { workerData: this.options });
    // The first message, or the worker's 'error' as a rejection (both listeners removed after).
    const [ready] = (await once(worker, 'message')) as [StoreReady];
    if (!ready.ready) {
      await worker.terminate();
      throw new IopError('internal', `the Responses store cannot open its database: ${ready.message}`);
    }
    // The store alone does not keep the process alive (the servers do); `close()` ends it.
    worker.unref();
    worker.on('message', (answer: StoreAnswer) => this.answer(answer));
    worker.on('error', (error) => this.lost(worker, error));
    worker.on('exit', (code) => this.lost(worker, new Error(`exit code ${code}`)));
    this.live = worker;
    return worker;
  }

  private answer(answer: StoreAnswer): void {
    const pending = this.pending.get(answer.id);
    if (pending === undefined) return;
    this.pending.delete(answer.id);
    if ('error' in answer) {
      const { code, message } = answer.error;
      pending.reject(code === undefined ? new Error(message) : new IopError(code as ErrorCode, message));
    } else pending.resolve(answer.value);
  }

  /** A worker stopped: its pending calls fail, and the next call starts a new one. */
  private lost(worker: Worker, error: Error): void {
    if (this.live === worker) {
      this.live = undefined;
      this.worker = undefined;
    }
    const failure = new IopError(
      'internal',
      `the Responses store worker stopped (${error.message}); the next call starts a new one`,
    );
    for (const [id, pending] of this.pending) {
      if (pending.worker !== worker) continue;
      this.pending.delete(id);
      pending.reject(failure);
    }
  }
}
