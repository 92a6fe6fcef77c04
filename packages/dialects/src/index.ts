export * as openaiChat from './openai-chat/index.js';
export * as openaiResponses from './openai-responses/index.js';
