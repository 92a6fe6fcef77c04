export { startSim, type SimOptions, type SimServer } from './server.js';
export { KNOB_SPECS, parseKnob } from './knob-specs.js';
export {
  DEFAULT_KNOBS,
  FAULT_NAMES,
  type Knobs,
  type FaultName,
  type ContentMode,
  type ReasoningFormat,
} from './knobs.js';
export { parseModelName, type ModelName } from './model-name.js';
export { splitTokens, countTokens, tokenId, promptTokenIds } from './tokenizer.js';
export type { RequestRecord, RequestOutput, SimStats } from './request-log.js';
export type { QueuedFault } from './fault-queue.js';
export { parseCli, helpText, type CliResult } from './cli.js';
export {
  GPU_A10G_7B,
  GPU_H100_8B,
  GPU_PROFILES,
  decodeStepMs,
  prefillMs,
  resolveProfile,
  type GpuProfile,
} from './gpu-profile.js';
export { GpuScheduler, Sequence, type FinishedReason, type SequenceEnd } from './gpu-scheduler.js';
export { PagedKvCache, blockHashes, type KvCacheObserver, type KvAllocation } from './kv-cache.js';
export { KvEventPublisher, type KvEventsFormat, type KvEventsOptions } from './kv-events.js';
