export * from './anthropic-messages/index.js';
