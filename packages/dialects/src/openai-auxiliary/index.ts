export * from './wire-types.js';
export * from './embeddings-request.js';
export * from './embedding-encode.js';
export * from './completions-request.js';
export * from './rerank-request.js';
