/**
 * Counters behind per-key limits: fixed-window sums (requests and tokens per minute, budgets)
 * and lease-based slot counts (concurrent streams), plus a broadcast channel (revocations).
 * `MemoryCounterStore` keeps them in this process (one edge: the default); `RedisCounterStore`
 * (redis-counter-store.ts) shares them between edges.
 */

export interface SlotResult {
  acquired: boolean;
  /** Slots held after the call (including this one when acquired). */
  count: number;
}

export interface CounterStore {
  /** Adds `amount` to `key` (created at 0, removed `ttlMs` after creation); resolves with the new sum. */
  add(key: string, amount: number, ttlMs: number): Promise<number>;
  /** The current sum of `key` (0 when absent). */
  get(key: string): Promise<number>;
  /** Takes a slot `leaseId` of `key` when fewer than `max` are held; a lease not released lapses after `leaseMs`. */
  acquireSlot(key: string, leaseId: string, max: number, leaseMs: number): Promise<SlotResult>;
  releaseSlot(key: string, leaseId: string): Promise<void>;
  /**
   * Sets each lease of `leases` (key → lease ids, the ones this edge's requests still hold) to
   * expire `leaseMs` from now. The edge holding them calls it periodically, so only a dead edge's
   * leases lapse; the shared store re-adds a lease it lost (outage, restart).
   */
  renewSlots(leases: ReadonlyMap<string, readonly string[]>, leaseMs: number): Promise<void>;
  /** Sends `message` to every edge's `onMessage` (this one included). */
  publish(message: string): Promise<void>;
  onMessage(listener: (message: string) => void): void;
  close(): Promise<void>;
}

interface Sum {
  value: number;
  expiresAtMs: number;
}

/** In-process counters; expired entries are swept on access and every minute. */
export class MemoryCounterStore implements CounterStore {
  private readonly sums = new Map<string, Sum>();
  private readonly slots = new Map<string, Map<string, number>>();
  private readonly listeners: Array<(message: string) => void> = [];
  private readonly sweep: NodeJS.Timeout;

  constructor(private readonly now: () => number = Date.now) {
    this.sweep = setInterval(() => this.sweepExpired(), 60_000);
    this.sweep.unref();
  }

  async add(key: string, amount: number, ttlMs: number): Promise<number> {
    return this.addNow(key, amount, ttlMs);
  }

  /** Synchronous `add` (the fail-open fallback uses it). */
  addNow(key: string, amount: number, ttlMs: number): number {
    const now = this.now();
    let sum = this.sums.get(key);
    if (sum === undefined || sum.expiresAtMs <= now) {
      sum = { value: 0, expiresAtMs: now + ttlMs };
      this.sums.set(key, sum);
    }
    sum.value += amount;
    return sum.value;
  }

  async get(key: string): Promise<number> {
    const sum = this.sums.get(key);
    return sum === undefined || sum.expiresAtMs <= this.now() ? 0 : sum.value;
  }

  async acquireSlot(key: string, leaseId: string, max: number, leaseMs: number): Promise<SlotResult> {
    const now = this.now();
    let leases = this.slots.get(key);
    if (leases === undefined) {
      leases = new Map();
      this.slots.set(key, leases);
    }
    for (const [id, expiresAtMs] of leases) if (expiresAtMs <= now) leases.delete(id);
    if (leases.size >= max) return { acquired: false, count: leases.size };
    leases.set(leaseId, now + leaseMs);
    return { acquired: true, count: leases.size };
  }

  async releaseSlot(key: string, leaseId: string): Promise<void> {
    const leases = this.slots.get(key);
    leases?.delete(leaseId);
    if (leases?.size === 0) this.slots.delete(key);
  }

  async renewSlots(leases: ReadonlyMap<string, readonly string[]>, leaseMs: number): Promise<void> {
    const now = this.now();
    for (const [key, ids] of leases) {
      const held = this.slots.get(key);
      if (held === undefined) continue;
      for (const id of ids) {
        const expiresAtMs = held.get(id);
        if (expiresAtMs !== undefined && expiresAtMs > now) held.set(id, now + leaseMs);
      }
    }
  }

  async publish(message: string): Promise<void> {
    for (const listener of this.listeners) listener(message);
  }

  onMessage(listener: (message: string) => void): void {
    this.listeners.push(listener);
  }

  private sweepExpired(): void {
    const now = this.now();
    for (const [key, sum] of this.sums) if (sum.expiresAtMs <= now) this.sums.delete(key);
  }

  async close(): Promise<void> {
    clearInterval(this.sweep);
  }
}
