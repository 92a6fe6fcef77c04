/**
 * The Responses store as the HTTP routes use it: a failure of the store itself (PostgreSQL down,
 * SQLite's worker gone) becomes a 503 `no_capacity` with `Retry-After` in the client's dialect
 * instead of a 500, and is remembered, so that the next request that asks to store is refused
 * before any work (`ready()`) rather than answered and then lost. A request that finds the store
 * failing probes it again (one read of an unknown id, shared by the requests that arrive while it
 * runs); the first call that succeeds clears the state. `storage.onFailure` does not change this:
 * failing open is about limits and cached keys, while a response that cannot be kept cannot be
 * reported stored (`store: true` means the row exists).
 *
 * IopErrors from the store (a record over `maxResponseBytes`: 413) pass through unchanged and say
 * nothing about its health.
 */
import { IopError } from '@iop/core';
import type { InputItemsPage, InputItemsQuery, ResponseStore, StoredResponse } from './store.js';

/** Seconds a client is told to wait (`Retry-After`) while the store is failing. */
export const STORE_RETRY_AFTER_SECONDS = 1;

const PROBE_ID = 'resp_store_probe';

export class GuardedResponseStore implements ResponseStore {
  private failing = false;
  private probe: Promise<boolean> | undefined;

  /** @param onFailure told of each store failure (logging); the store's error, not the client's. */
  constructor(
    private readonly store: ResponseStore,
    private readonly onFailure: (error: unknown) => void = () => {},
  ) {}

  /** True while the last call to the store failed. */
  get isFailing(): boolean {
    return this.failing;
  }

  /**
   * Resolves when the store can be expected to keep a response: at once while its last call
   * succeeded, else after a successful probe.
   * @throws IopError `no_capacity` (503, `Retry-After`) when the probe fails too.
   */
  async ready(): Promise<void> {
    if (!this.failing) return;
    this.probe ??= this.store.get(PROBE_ID, '').then(
      () => true,
      () => false,
    );
    const probe = this.probe;
    const ok = await probe;
    if (this.probe === probe) this.probe = undefined;
    if (ok) this.failing = false;
    else throw unavailable();
  }

  put(record: StoredResponse, owner: string): Promise<void> {
    return this.guard(() => this.store.put(record, owner));
  }

  get(id: string, owner: string): Promise<StoredResponse | undefined> {
    return this.guard(() => this.store.get(id, owner));
  }

  delete(id: string, owner: string): Promise<boolean> {
    return this.guard(() => this.store.delete(id, owner));
  }

  inputItems(id: string, owner: string, query?: InputItemsQuery): Promise<InputItemsPage | undefined> {
    return this.guard(() => this.store.inputItems(id, owner, query));
  }

  close(): Promise<void> {
    return this.store.close();
  }

  private async guard<T>(call: () => Promise<T>): Promise<T> {
    try {
      const value = await call();
      this.failing = false;
      return value;
    } catch (error) {
      // The store's own refusals (413 too large, 400 from paging) are answers, not outages.
      if (error instanceof IopError || error instanceof RangeError) throw error;
      this.failing = true;
      this.onFailure(error);
      throw unavailable(error);
    }
  }
}

function unavailable(cause?: unknown): IopError {
  return new IopError(
    'no_capacity',
    'the Responses store is unavailable: the response cannot be stored or read now; retry shortly, or send "store": false to run without storing',
    { retryAfterSeconds: STORE_RETRY_AFTER_SECONDS, ...(cause === undefined ? {} : { cause }) },
  );
}

const guarded = new WeakMap<ResponseStore, GuardedResponseStore>();

/**
 * The one guarded store of `responses` (every route, HTTP and WebSocket, sees the same outages);
 * failures are logged at warn on `logger`.
 */
export function guardedStore(
  responses: ResponseStore,
  logger: { warn(fields: object, message: string): void },
): GuardedResponseStore {
  if (responses instanceof GuardedResponseStore) return responses;
  let store = guarded.get(responses);
  if (store === undefined) {
    store = new GuardedResponseStore(responses, (error) =>
      logger.warn({ error: error instanceof Error ? error.message : String(error) }, 'Responses store call failed'),
    );
    guarded.set(responses, store);
  }
  return store;
}
