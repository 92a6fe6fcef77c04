export * from './store.js';
export * from './memory-store.js';
export * from './sqlite-store.js';
export * from './worker-store.js';
export * from './sql-store.js';
