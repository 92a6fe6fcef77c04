export * from './backend-call.js';
export * from './frames.js';
export * from './openai-client.js';
export * from './relay.js';
export {
  RunErrorCode,
  runErrorInfo,
  runErrorName,
  runErrorToIopError,
  type RunErrorInfo,
  type RunFailureKind,
} from './run-errors.js';
export * from './run-failure.js';
