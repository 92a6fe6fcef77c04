/** Stored Responses as the rest of the edge uses them: the store contract, its implementations, retention. */
export { defaultDataDir, SqliteResponseStore } from './sqlite-store.js';
export {
  type InputItemsQuery,
  keepResponse,
  pageInputItems,
  resolveRetention,
  type ResponseStore,
  type RetentionOptions,
  type StoredResponse,
} from './store.js';
export { MemoryResponseStore } from './memory-store.js';
export { WorkerResponseStore } from './worker-store.js';
