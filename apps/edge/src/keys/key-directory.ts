/**
 * Finds the key a request presents, from three places: the config's plain `apiKeys` (no policy),
 * the config's `keys` (with policy), and the keys managed through the admin API (KeyStore, SQL).
 * Store lookups are cached by hash for `cacheTtlMs` (found and not found alike), so a revocation,
 * rotation or update on any edge is seen by every edge within that time — at once on edges that
 * share Redis, which broadcasts `invalidate` (limits/counter-store.ts `publish`).
 *
 * When the store cannot be reached, `open` answers from the last cached entry however old (a key
 * never seen stays unknown: failing open never lets an unknown key in) and `closed` refuses with
 * 503.
 */
import { IopError } from '@iop/core';
import type { Logger } from '../logger.js';
import type { FailureMode } from '../storage/storage-config.js';
import { hashKey, type ApiKeyRecord } from './api-key.js';
import type { KeyStore } from './key-store.js';

/** Who a request is, for limits, the ledger and stored Responses. */
export interface KeyIdentity {
  /** The key's policy; undefined for a plain `apiKeys` key and on an open edge. */
  record?: ApiKeyRecord;
  /** Ledger id: the record's id, `legacy:<first 12 hex of the hash>`, or `open`. */
  keyId: string;
  /** Owner of stored Responses (responses-store/store.ts). */
  owner: string;
}

interface CacheEntry {
  record: ApiKeyRecord | undefined;
  fetchedAtMs: number;
}

const MAX_CACHED = 10_000;

export interface KeyDirectoryOptions {
  store?: KeyStore;
  cacheTtlMs: number;
  failureMode: FailureMode;
  logger: Logger;
  now?: () => number;
}

export class KeyDirectory {
  private readonly cache = new Map<string, CacheEntry>();
  private readonly now: () => number;
  private configKeys = new Map<string, ApiKeyRecord>();
  private lastWarnMs = 0;

  constructor(private readonly options: KeyDirectoryOptions) {
    this.now = options.now ?? Date.now;
  }

  /** Replaces the keys from the config file (start and reload). */
  setConfigKeys(records: readonly ApiKeyRecord[]): void {
    this.configKeys = new Map(records.map((record) => [record.keyHash, record]));
  }

  get hasConfigKeys(): boolean {
    return this.configKeys.size > 0;
  }

  get hasStore(): boolean {
    return this.options.store !== undefined;
  }

  private activeStoreKeys: { value: boolean; fetchedAtMs: number } | undefined;

  /**
   * Whether the store holds any usable key (cached like lookups). An unreachable store counts as
   * holding keys: the edge never turns open because its database is down.
   */
  async storeHasKeys(): Promise<boolean> {
    const store = this.options.store;
    if (store === undefined) return false;
    const now = this.now();
    if (this.activeStoreKeys !== undefined && now - this.activeStoreKeys.fetchedAtMs < this.options.cacheTtlMs)
      return this.activeStoreKeys.value;
    const value = await store.hasActiveKeys().catch(() => true);
    this.activeStoreKeys = { value, fetchedAtMs: now };
    return value;
  }

  /** Drops a cached hash (a broadcast from the edge that revoked or rotated it), or everything. */
  invalidate(keyHash?: string): void {
    this.activeStoreKeys = undefined;
    if (keyHash === undefined) this.cache.clear();
    else this.cache.delete(keyHash);
  }

  /**
   * The record of a key with policy (config `keys` or the store), undefined when neither knows it.
   * @throws IopError 503 when the store is unreachable and the policy is `closed` (or nothing is cached).
   */
  async lookup(key: string): Promise<ApiKeyRecord | undefined> {
    const keyHash = hashKey(key);
    const fromConfig = this.configKeys.get(keyHash);
    if (fromConfig !== undefined) return fromConfig;
    const store = this.options.store;
    if (store === undefined) return undefined;
    const now = this.now();
    const cached = this.cache.get(keyHash);
    if (cached !== undefined && now - cached.fetchedAtMs < this.options.cacheTtlMs) return cached.record;
    try {
      const record = await store.byHash(keyHash);
      if (this.cache.size >= MAX_CACHED) this.cache.clear();
      this.cache.set(keyHash, { record, fetchedAtMs: now });
      return record;
    } catch (error) {
      if (now - this.lastWarnMs >= 10_000) {
        this.lastWarnMs = now;
        this.options.logger.warn(
          { error: error instanceof Error ? error.message : String(error), failureMode: this.options.failureMode },
          'key store unavailable',
        );
      }
      if (this.options.failureMode === 'open' && cached !== undefined) return cached.record;
      throw new IopError('no_capacity', 'shared state unavailable: the key store cannot be reached; retry shortly', {
        retryAfterSeconds: 1,
      });
    }
  }
}
