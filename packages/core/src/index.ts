/** The package's public surface: what the other workspaces import (tests inside the package import modules by path). */
export {
  addBindingFlags,
  type Assert,
  type BindingAlias,
  type ConfigBinding,
  compileSchema,
  configBindings,
  ConfigError,
  type ConfigLayer,
  iopCommand,
  layerFromEnv,
  layerFromFlags,
  mergeConfigLayers,
  parseBindingValue,
  publishedJsonSchema,
  readConfigFile,
  type SameShape,
  setPath,
  stringEnum,
  withSources,
} from './config/index.js';
export { applyHeapGrowth, HEAP_GROWTH_PERCENT_SCHEMA } from './heap-growth.js';
export type {
  AssistantMessage,
  AssistantPart,
  ContentPart,
  ImagePart,
  InferenceRequest,
  Message,
  ReasoningConfig,
  ResponseFormat,
  TextPart,
  ToolCallPart,
  ToolChoice,
  ToolDefinition,
  ToolMessage,
  ToolOrigin,
} from './request.js';
export { AsyncQueue } from './async-queue.js';
export { backoffDelayMs, sleep } from './backoff.js';
export {
  codeOfStatus,
  type ErrorCode,
  ErrorCodes,
  excerpt,
  invalidRequest,
  IopError,
  isRetryableCode,
  isRetryableStatus,
  statusOf,
  toIopError,
} from './errors.js';
export { createLogger, type LogFormat, type Logger } from './logger.js';
export {
  deliveredFinishReason,
  type ErrorEvent,
  errorEventOf,
  type FinishEvent,
  type FinishReason,
  iopErrorOf,
  type ReasoningDeltaEvent,
  type StreamEvent,
  type ToolCallDeltaEvent,
  type Usage,
} from './events.js';
export type {
  Dialect,
  DialectEndpoint,
  EncodeContext,
  ErrorResponse,
  ModelListing,
  RateLimitState,
  RequestTarget,
  StreamEncoder,
  UpstreamDecoder,
} from './dialect.js';
export {
  extractContext,
  failSpan,
  injectActive,
  injectHeaders,
  otelContext,
  otelTrace,
  startTracing,
  traceFieldsOf,
  tracer,
} from './tracing.js';
export { newId } from './ids.js';
export { printReadiness } from './log-destination.js';
export { secretEquals, secretIn } from './secret.js';
export { seededRandom } from './random.js';
export { SSE_DONE, type SseEvent, sseFrame, sseJson, SseReader } from './sse.js';
