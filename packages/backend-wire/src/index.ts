export { chatUsageOf, chatUsageOfJson } from './chat-usage.js';
export {
  DONE_DATA,
  chunkGenerated,
  chunkToolCalls,
  classifyChunk,
  finishReasonsOf,
  hasFinishReason,
  isJsonObject,
  parseChunkData,
  type ChunkData,
  type ChunkKind,
  type JsonObject,
} from './chunk.js';
export {
  ChunkKeys,
  STOP_LABEL,
  TOOL_CALLS_LABEL,
  isDoneBytes,
  isObjectBytes,
  matchesAt,
  startsWith,
  trimSpaces,
} from './chunk-bytes.js';
export { ChunkRules, dataEvent, deliveredAnswer, withDeliveredFinish, type ChunkVerdict } from './chunk-rules.js';
export { SseEventFields } from './sse-event-bytes.js';
export {
  MAX_ERROR_BODY_BYTES,
  errorEventFromUpstream,
  normalizeUpstreamError,
  upstreamErrorOf,
} from './upstream-error.js';
export { UsageScanner, usageBodyKindOf, type UsageBodyKind } from './usage-scanner.js';
