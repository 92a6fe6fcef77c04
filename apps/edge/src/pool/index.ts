export * from './admission-queue.js';
export * from './outlier-detector.js';
export * from './p2c.js';
export * from './pool-config.js';
export * from './prefix-affinity.js';
export * from './provider.js';
export * from './retry-budget.js';
export * from './retry-policy.js';
