export { geminiDialect } from './dialect.js';
export { decodeGenerateContentRequest, decodeCountTokensRequest } from './request-decode.js';
export { GeminiStreamEncoder } from './stream-encode.js';
export { encodeGeminiResponse } from './response-encode.js';
export { geminiErrorResponse, geminiErrorStatus, googleErrorBody, googleStatus } from './errors.js';
export { toJsonSchema } from './tools-decode.js';
export { geminiModelList, geminiModelInfo } from './model-list.js';
export type * from './wire-types.js';
