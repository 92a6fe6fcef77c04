/**
 * An in-memory `ResponseStore` (tests, single-process dev): a Map in insertion order with the same
 * retention and size rules as SQLite (sizes measured as record-codec.ts text, on the caller's thread).
 */
import { encodeRecord } from './record-codec.js';
import {
  pageInputItems,
  recordTooLarge,
  resolveRetention,
  type InputItemsPage,
  type InputItemsQuery,
  type ResolvedRetention,
  type ResponseStore,
  type RetentionOptions,
  type StoredResponse,
} from './store.js';

interface Entry {
  record: StoredResponse;
  owner: string;
  storedAtMs: number;
  bytes: number;
}

export class MemoryResponseStore implements ResponseStore {
  private readonly entries = new Map<string, Entry>();
  private readonly retention: ResolvedRetention;
  private totalBytes = 0;

  constructor(options: RetentionOptions = {}) {
    this.retention = resolveRetention(options);
  }

  /** @throws IopError `request_too_large` over `maxResponseBytes` (nothing is stored). */
  async put(record: StoredResponse, owner: string): Promise<void> {
    const bytes = Buffer.byteLength(encodeRecord(record));
    if (bytes > this.retention.maxResponseBytes) throw recordTooLarge(bytes, this.retention.maxResponseBytes);
    this.remove(record.id);
    this.entries.set(record.id, { record, owner, storedAtMs: this.retention.now(), bytes });
    this.totalBytes += bytes;
    this.prune();
  }

  async get(id: string, owner: string): Promise<StoredResponse | undefined> {
    return this.live(id, owner)?.record;
  }

  async delete(id: string, owner: string): Promise<boolean> {
    return this.entries.get(id)?.owner === owner && this.remove(id);
  }

  async inputItems(id: string, owner: string, query?: InputItemsQuery): Promise<InputItemsPage | undefined> {
    const entry = this.live(id, owner);
    return entry === undefined ? undefined : pageInputItems(entry.record.inputItems, query);
  }

  async close(): Promise<void> {
    this.entries.clear();
    this.totalBytes = 0;
  }

  private remove(id: string): boolean {
    const entry = this.entries.get(id);
    if (entry === undefined) return false;
    this.totalBytes -= entry.bytes;
    return this.entries.delete(id);
  }

  /** The unexpired entry of `owner`; an expired one is dropped whoever asks. */
  private live(id: string, owner: string): Entry | undefined {
    const entry = this.entries.get(id);
    if (entry === undefined) return undefined;
    if (entry.storedAtMs <= this.retention.now() - this.retention.maxAgeMs) {
      this.remove(id);
      return undefined;
    }
    return entry.owner === owner ? entry : undefined;
  }

  /** Drops expired entries and the oldest beyond `maxRows` or `maxTotalBytes` (the Map iterates oldest first). */
  private prune(): void {
    const cutoff = this.retention.now() - this.retention.maxAgeMs;
    for (const [id, entry] of this.entries) {
      if (
        entry.storedAtMs > cutoff &&
        this.entries.size <= this.retention.maxRows &&
        this.totalBytes <= this.retention.maxTotalBytes
      )
        break;
      this.remove(id);
    }
  }
}
