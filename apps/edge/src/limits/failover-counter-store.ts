/**
 * The failure policy for a shared counter store (`storage.onFailure`): when a call to Redis fails,
 * `open` logs a warning (at most every 10 s) and answers from this edge's own in-memory counters —
 * limits then hold per edge, not across edges, until Redis is back — while `closed` throws a 503
 * (`no_capacity`, "shared state unavailable") so no request runs unmetered. A slot taken locally
 * is released locally.
 */
import { IopError } from '@iop/core';
import type { Logger } from '../logger.js';
import type { FailureMode } from '../storage/storage-config.js';
import { MemoryCounterStore, type CounterStore, type SlotResult } from './counter-store.js';

const WARN_EVERY_MS = 10_000;

export class FailoverCounterStore implements CounterStore {
  private readonly local = new MemoryCounterStore();
  private readonly localLeases = new Set<string>();
  private lastWarnMs = 0;
  /** Calls answered locally (fail open) or refused (fail closed) since start. */
  failures = 0;

  constructor(
    private readonly shared: CounterStore,
    private readonly mode: FailureMode,
    private readonly logger: Logger,
  ) {}

  private async guarded<T>(operation: string, shared: () => Promise<T>, local: () => Promise<T>): Promise<T> {
    try {
      return await shared();
    } catch (error) {
      this.failures++;
      const now = Date.now();
      if (now - this.lastWarnMs >= WARN_EVERY_MS) {
        this.lastWarnMs = now;
        const message = error instanceof Error ? error.message : String(error);
        if (this.mode === 'open')
          this.logger.warn(
            { operation, error: message },
            "shared counters unavailable: failing open on this edge's own counters",
          );
        else this.logger.error({ operation, error: message }, 'shared counters unavailable: failing closed (503)');
      }
      if (this.mode === 'closed')
        throw new IopError(
          'no_capacity',
          'shared state unavailable: the rate-limit store cannot be reached; retry shortly',
          { retryAfterSeconds: 1 },
        );
      return local();
    }
  }

  add(key: string, amount: number, ttlMs: number): Promise<number> {
    return this.guarded(
      'add',
      () => this.shared.add(key, amount, ttlMs),
      () => this.local.add(key, amount, ttlMs),
    );
  }

  get(key: string): Promise<number> {
    return this.guarded(
      'get',
      () => this.shared.get(key),
      () => this.local.get(key),
    );
  }

  acquireSlot(key: string, leaseId: string, max: number, leaseMs: number): Promise<SlotResult> {
    return this.guarded(
      'acquireSlot',
      // A command that timed out may still run later in Redis: its lease is released after it.
      () =>
        this.shared.acquireSlot(key, leaseId, max, leaseMs).catch((error: unknown) => {
          void this.shared.releaseSlot(key, leaseId).catch(() => {});
          throw error;
        }),
      async () => {
        const result = await this.local.acquireSlot(key, leaseId, max, leaseMs);
        if (result.acquired) this.localLeases.add(leaseId);
        return result;
      },
    );
  }

  async releaseSlot(key: string, leaseId: string): Promise<void> {
    if (this.localLeases.delete(leaseId)) return this.local.releaseSlot(key, leaseId);
    // A lease that cannot be released lapses on its own (leaseMs): never fail the request for it.
    await this.shared.releaseSlot(key, leaseId).catch(() => {});
  }

  async renewSlots(leases: ReadonlyMap<string, readonly string[]>, leaseMs: number): Promise<void> {
    const local = new Map<string, string[]>();
    const shared = new Map<string, string[]>();
    for (const [key, ids] of leases) {
      for (const id of ids) {
        const target = this.localLeases.has(id) ? local : shared;
        const list = target.get(key);
        if (list === undefined) target.set(key, [id]);
        else list.push(id);
      }
    }
    if (local.size > 0) await this.local.renewSlots(local, leaseMs);
    // A renewal that fails is tried again at the next period; the lease lapses only if none succeeds.
    if (shared.size > 0) await this.shared.renewSlots(shared, leaseMs).catch(() => {});
  }

  async publish(message: string): Promise<void> {
    await this.shared.publish(message).catch(() => {});
  }

  onMessage(listener: (message: string) => void): void {
    this.shared.onMessage(listener);
  }

  async close(): Promise<void> {
    await this.local.close();
    await this.shared.close();
  }
}
