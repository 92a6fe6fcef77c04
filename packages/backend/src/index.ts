export * from './backend-call.js';
export * from './frames.js';
export * from './openai-client.js';
export * from './relay.js';
export * from './run-failure.js';
export * from './usage-scanner.js';
