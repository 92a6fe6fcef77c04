/**
 * `CounterStore` on Redis (ioredis), shared by every edge: sums are `INCRBY` + `PEXPIRE` on first
 * write (one round trip, MULTI); slots are a sorted set of leases scored by their expiry, taken
 * and counted atomically by a Lua script; broadcasts go over pub/sub on `<prefix>events`.
 *
 * Commands fail fast while Redis is unreachable (no offline queue, one retry, `commandTimeoutMs`),
 * so the failure policy (failover-counter-store.ts) decides at once instead of requests hanging.
 */
import type { Redis } from 'ioredis';
import type { CounterStore, SlotResult } from './counter-store.js';

export interface RedisCounterOptions {
  /** `redis://host:port/db`. */
  url: string;
  /** Prefix of every key and of the channel, so deployments or tests can share one server. Default `iop:`. */
  keyPrefix?: string;
  /** Longest wait for one command, ms. Default 1,000. */
  commandTimeoutMs?: number;
}

// KEYS[1] slot set; ARGV: now ms, lease expiry ms, lease id, max.
const ACQUIRE = `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
local count = redis.call('ZCARD', KEYS[1])
if count >= tonumber(ARGV[4]) then return {0, count} end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[3])
redis.call('PEXPIREAT', KEYS[1], ARGV[2])
return {1, count + 1}`;

// KEYS[1] slot set; ARGV: now ms, lease expiry ms, lease ids... Sets every lease the edge still
// holds, re-adding one that lapsed during an outage or that Redis lost (a restart), so the limit
// counts the streams still running once Redis is back.
const RENEW = `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
for i = 3, #ARGV do
  redis.call('ZADD', KEYS[1], ARGV[2], ARGV[i])
end
redis.call('PEXPIREAT', KEYS[1], ARGV[2])
return #ARGV - 2`;

export class RedisCounterStore implements CounterStore {
  private readonly redis: Redis;
  private subscriber: Redis | undefined;
  private readonly prefix: string;
  private readonly channel: string;
  private readonly listeners: Array<(message: string) => void> = [];

  constructor(options: RedisCounterOptions) {
    this.prefix = options.keyPrefix ?? 'iop:';
    this.channel = `${this.prefix}events`;
    const common = {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      commandTimeout: options.commandTimeoutMs ?? 1_000,
      // Reconnect forever, at most every 2 s: Redis coming back is picked up on its own.
      retryStrategy: (times: number) => Math.min(100 * times, 2_000),
      lazyConnect: false,
    };
    // ioredis is loaded only when Redis is configured: an edge without it keeps its 50 modules out of memory.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const client = require('ioredis') as { Redis: typeof Redis };
    this.redis = new client.Redis(options.url, common);
    this.redis.on('error', () => {}); // reported per command, through the failure policy
    this.redis.defineCommand('iopAcquireSlot', { numberOfKeys: 1, lua: ACQUIRE });
    this.redis.defineCommand('iopRenewSlots', { numberOfKeys: 1, lua: RENEW });
  }

  /** Resolves once connected (start-up check). @throws when Redis cannot be reached within `timeoutMs`. */
  async ready(timeoutMs = 5_000): Promise<void> {
    if (this.redis.status === 'ready') return;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`Redis not reachable within ${timeoutMs} ms`)), timeoutMs);
      this.redis.once('ready', () => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  async add(key: string, amount: number, ttlMs: number): Promise<number> {
    const full = this.prefix + key;
    const result = await this.redis.multi().incrby(full, amount).pexpire(full, ttlMs, 'NX').exec();
    const [error, value] = result?.[0] ?? [new Error('Redis MULTI aborted'), 0];
    if (error) throw error;
    return Number(value);
  }

  async get(key: string): Promise<number> {
    const value = await this.redis.get(this.prefix + key);
    return value === null ? 0 : Number(value);
  }

  async acquireSlot(key: string, leaseId: string, max: number, leaseMs: number): Promise<SlotResult> {
    const now = Date.now();
    const [acquired, count] = await (
      this.redis as unknown as { iopAcquireSlot(...args: Array<string | number>): Promise<[number, number]> }
    ).iopAcquireSlot(this.prefix + key, now, now + leaseMs, leaseId, max);
    return { acquired: acquired === 1, count };
  }

  async releaseSlot(key: string, leaseId: string): Promise<void> {
    await this.redis.zrem(this.prefix + key, leaseId);
  }

  async renewSlots(leases: ReadonlyMap<string, readonly string[]>, leaseMs: number): Promise<void> {
    const now = Date.now();
    const pipeline = this.redis.pipeline() as unknown as {
      iopRenewSlots(...args: Array<string | number>): void;
      exec(): Promise<unknown>;
    };
    for (const [key, ids] of leases) pipeline.iopRenewSlots(this.prefix + key, now, now + leaseMs, ...ids);
    await pipeline.exec();
  }

  async publish(message: string): Promise<void> {
    await this.redis.publish(this.channel, message);
  }

  onMessage(listener: (message: string) => void): void {
    this.listeners.push(listener);
    if (this.subscriber !== undefined) return;
    this.subscriber = this.redis.duplicate({ enableOfflineQueue: true });
    this.subscriber.on('error', () => {});
    this.subscriber.on('message', (channel: string, message: string) => {
      if (channel === this.channel) for (const each of this.listeners) each(message);
    });
    void this.subscriber.subscribe(this.channel).catch(() => {});
  }

  async close(): Promise<void> {
    this.subscriber?.disconnect();
    this.redis.disconnect();
  }
}
