/** The dialect codecs the edge uses, in one place. */
import { openaiChat } from '@iop/dialects';

export const chatDialect = openaiChat.openAIChat;
export const { peekChatRequest, toBackendChatRequest, createChatStreamDecoder, normalizeUpstreamError, toOpenAIErrorBody } = openaiChat;
export type ToolIdMap = openaiChat.ToolIdMap;
