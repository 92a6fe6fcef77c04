export * from './wire-types.js';
export * from './finish-reason.js';
export * from './usage.js';
export * from './errors.js';
export * from './tool-ids.js';
export * from './stream-decode.js';
export * from './backend-request.js';
