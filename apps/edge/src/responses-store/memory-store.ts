/** An in-memory `ResponseStore` (tests, single-process dev): a Map in insertion order with the same retention rules as SQLite. */
import { pageInputItems, resolveRetention, type InputItemsPage, type InputItemsQuery, type ResolvedRetention, type ResponseStore, type RetentionOptions, type StoredResponse } from './store.js';

interface Entry {
  record: StoredResponse;
  owner: string;
  storedAtMs: number;
}

export class MemoryResponseStore implements ResponseStore {
  private readonly entries = new Map<string, Entry>();
  private readonly retention: ResolvedRetention;

  constructor(options: RetentionOptions = {}) {
    this.retention = resolveRetention(options);
  }

  async put(record: StoredResponse, owner: string): Promise<void> {
    this.entries.delete(record.id);
    this.entries.set(record.id, { record, owner, storedAtMs: this.retention.now() });
    this.prune();
  }

  async get(id: string, owner: string): Promise<StoredResponse | undefined> {
    return this.live(id, owner)?.record;
  }

  async delete(id: string, owner: string): Promise<boolean> {
    return this.entries.get(id)?.owner === owner && this.entries.delete(id);
  }

  async inputItems(id: string, owner: string, query?: InputItemsQuery): Promise<InputItemsPage | undefined> {
    const entry = this.live(id, owner);
    return entry === undefined ? undefined : pageInputItems(entry.record.inputItems, query);
  }

  async close(): Promise<void> {
    this.entries.clear();
  }

  /** The unexpired entry of `owner`; an expired one is dropped whoever asks. */
  private live(id: string, owner: string): Entry | undefined {
    const entry = this.entries.get(id);
    if (entry === undefined) return undefined;
    if (entry.storedAtMs <= this.retention.now() - this.retention.maxAgeMs) {
      this.entries.delete(id);
      return undefined;
    }
    return entry.owner === owner ? entry : undefined;
  }

  /** Drops expired entries and the oldest beyond `maxRows` (the Map iterates oldest first). */
  private prune(): void {
    const cutoff = this.retention.now() - this.retention.maxAgeMs;
    for (const [id, entry] of this.entries) {
      if (entry.storedAtMs > cutoff && this.entries.size <= this.retention.maxRows) break;
      this.entries.delete(id);
    }
  }
}
