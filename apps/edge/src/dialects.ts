/** The dialect codecs the edge uses, in one place. */
export {
  openAIChat as chatDialect,
  peekChatRequest,
  toBackendChatRequest,
  createChatStreamDecoder,
  normalizeUpstreamError,
  toOpenAIErrorBody,
  type ToolIdMap,
} from '@iop/dialects';
