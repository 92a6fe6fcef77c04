export * as openaiChat from './openai-chat/index.js';
