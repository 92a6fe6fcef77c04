export * as openaiChat from './openai-chat/index.js';
export * from './anthropic-messages/index.js';
export * as openaiResponses from './openai-responses/index.js';
