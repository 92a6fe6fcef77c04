/**
 * The dialects' public surface: each dialect's `Dialect` object (named after its wire API: `openaiChat`,
 * `anthropicMessages`, `openaiResponses`, `gemini`) and the codecs the edge uses beside it. Tests inside the package
 * import modules by path.
 */
export { openaiChat } from './openai-chat/dialect.js';
export { toBackendChatRequest } from './openai-chat/backend-request.js';
export { toOpenAIErrorBody } from './openai-chat/errors.js';
export { validateChatPassthrough, type ChatPassthroughRequest } from './openai-chat/request-decode.js';
export { createChatStreamDecoder } from './openai-chat/stream-decode.js';
export { restoreToolIds, type ToolIdMap } from './openai-chat/tool-ids.js';

export { anthropicMessages } from './anthropic-messages/dialect.js';
export {
  countTokensResponse,
  decodeCountTokensRequest,
  TOKEN_COUNT_HEADER,
} from './anthropic-messages/count-tokens.js';

export { openaiResponses } from './openai-responses/dialect.js';
export { responseRecordOf, storedResponseOf, withHistory, type StoredResponse } from './openai-responses/history.js';
export { decodeResponsesRequest } from './openai-responses/request-decode.js';
export { encodeResponsesResponse } from './openai-responses/response-encode.js';
export { createResponsesLinesEncoder } from './openai-responses/stream-encode.js';
export type { ResponseObject, StoredInputItem } from './openai-responses/wire-types.js';

export { gemini } from './gemini/dialect.js';

export { estimateRequestTokens } from './shared/token-estimate.js';

export type { AuxiliaryRequest } from './openai-auxiliary/wire-types.js';
export { readCompletionsRequest } from './openai-auxiliary/completions-request.js';
export { encodeEmbeddingsAnswer } from './openai-auxiliary/embedding-encode.js';
export { readEmbeddingsRequest } from './openai-auxiliary/embeddings-request.js';
export { orderRerankAnswer, readRerankRequest, readScoreRequest } from './openai-auxiliary/rerank-request.js';
