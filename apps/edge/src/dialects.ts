/** The dialect codecs the edge uses, in one place. */
import { openaiChat } from '@iop/dialects';

export const chatDialect = openaiChat.openAIChat;
export const {
  validateChatPassthrough,
  toBackendChatRequest,
  createChatStreamDecoder,
  restoreToolIds,
  toOpenAIErrorBody,
} = openaiChat;
export type ToolIdMap = openaiChat.ToolIdMap;
export type ChatPassthroughRequest = openaiChat.ChatPassthroughRequest;

import { anthropic } from '@iop/dialects';

export const anthropicDialect = anthropic.anthropicMessages;
export const { decodeCountTokensRequest, estimateRequestTokens, countTokensResponse, TOKEN_COUNT_HEADER } = anthropic;

import { openaiResponses } from '@iop/dialects';

export const responsesDialect = openaiResponses.openAIResponses;
export const { storedResponseOf, responseRecordOf, withHistory, createResponsesLinesEncoder } = openaiResponses;
export type StoredResponse = openaiResponses.StoredResponse;
export type ResponseObject = openaiResponses.ResponseObject;
