export * as openaiChat from './openai-chat/index.js';
export * as anthropic from './anthropic-messages/index.js';
export * as openaiResponses from './openai-responses/index.js';
export * as gemini from './gemini/index.js';
export * as openaiAuxiliary from './openai-auxiliary/index.js';
