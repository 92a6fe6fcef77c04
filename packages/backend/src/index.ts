/** The package's public surface: what the other workspaces import (tests inside the package import modules by path). */
export { acceptedFrame, errorFrame, FrameKind, isFinalFrame } from './frames.js';
export type { BackendCall, BackendRequest, BackendResponse } from './backend-call.js';
export { basePathOf, OpenAiClient } from './openai-client.js';
export { relayBackend, type FrameSink } from './relay.js';
export {
  RunErrorCode,
  runErrorInfo,
  runErrorName,
  runErrorToIopError,
  type RunErrorInfo,
  type RunFailureKind,
} from './run-errors.js';
export { RunFailure } from './run-failure.js';
