export { startSim, type SimOptions, type SimServer } from './server.js';
export { DEFAULT_KNOBS, FAULT_NAMES, KNOB_SPECS, parseKnob, type Knobs, type FaultName, type ContentMode, type ReasoningFormat } from './knobs.js';
export { parseModelName, type ModelName } from './model-name.js';
export { splitTokens, countTokens, tokenId } from './tokenizer.js';
export type { RequestRecord, RequestOutput, SimStats } from './request-log.js';
export type { QueuedFault } from './fault-queue.js';
export { parseCli, helpText, type CliResult } from './cli.js';
