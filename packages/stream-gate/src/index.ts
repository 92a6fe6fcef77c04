export * from './filter.js';
export * from './sink.js';
export * from './config.js';
export * from './gate-header.js';
export * from './attempt-request.js';
export * from './recovery.js';
export * from './stream-gate.js';
export * from './usage.js';
