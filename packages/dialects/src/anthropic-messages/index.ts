export { anthropicMessages } from './dialect.js';
export { decodeMessagesRequest as decodeAnthropicRequest, MIN_THINKING_BUDGET_TOKENS } from './request-decode.js';
export { AnthropicStreamEncoder, UNSIGNED_THINKING_SIGNATURE } from './stream-encode.js';
export { anthropicErrorType, anthropicErrorStatus } from './errors.js';
export { anthropicRateLimitHeaders } from './rate-limits.js';
export { anthropicModelList, type AnthropicModel } from './model-list.js';
export {
  countTokensResponse,
  decodeCountTokensRequest,
  estimateRequestTokens,
  estimateTokens,
  IMAGE_TOKENS_ESTIMATE,
  MESSAGE_OVERHEAD_TOKENS,
  renderCountTokensText,
  TOKEN_COUNT_HEADER,
  type TokenCountKind,
} from './count-tokens.js';
export type {
  AnthropicErrorBody,
  AnthropicErrorType,
  AnthropicMessage,
  AnthropicUsage,
  CountTokensParams,
  CountTokensResponse,
  MessageCreateParams,
} from './wire-types.js';
