export * from './config-schema.js';
export * from './config-bindings.js';
export * from './config-file.js';
export * from './config-flags.js';
export * from './command.js';
