export * from './errors.js';
export * from './events.js';
export * from './request.js';
export * from './sse.js';
export * from './ids.js';
export * from './dialect.js';
export * from './async-queue.js';
export * from './log-destination.js';
