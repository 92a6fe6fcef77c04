/** An in-memory `ResponseStore` (tests, single-process dev): a Map in insertion order with the same retention rules as SQLite. */
import { pageInputItems, resolveRetention, type InputItemsPage, type InputItemsQuery, type ResolvedRetention, type ResponseStore, type RetentionOptions, type StoredResponse } from './store.js';

interface Entry {
  record: StoredResponse;
  storedAtMs: number;
}

export class MemoryResponseStore implements ResponseStore {
  private readonly entries = new Map<string, Entry>();
  private readonly retention: ResolvedRetention;

  constructor(options: RetentionOptions = {}) {
    this.retention = resolveRetention(options);
  }

  async put(record: StoredResponse): Promise<void> {
    this.entries.delete(record.id);
    this.entries.set(record.id, { record, storedAtMs: this.retention.now() });
    this.prune();
  }

  async get(id: string): Promise<StoredResponse | undefined> {
    return this.live(id)?.record;
  }

  async delete(id: string): Promise<boolean> {
    return this.entries.delete(id);
  }

  async inputItems(id: string, query?: InputItemsQuery): Promise<InputItemsPage | undefined> {
    const entry = this.live(id);
    return entry === undefined ? undefined : pageInputItems(entry.record.inputItems, query);
  }

  async close(): Promise<void> {
    this.entries.clear();
  }

  private live(id: string): Entry | undefined {
    const entry = this.entries.get(id);
    if (entry === undefined) return undefined;
    if (entry.storedAtMs <= this.retention.now() - this.retention.maxAgeMs) {
      this.entries.delete(id);
      return undefined;
    }
    return entry;
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
