/**
 * The gate's public surface: what the edge and tests outside the package use. Filters, policies and recovery stay
 * internal (the package's own tests import them by path).
 */
export { type AttemptReport, type GateSink, noopSink } from './sink.js';
export type { AttemptRequest, DispatchedAttempt, Dispatcher } from './attempt-request.js';
export {
  createGateFromConfig,
  gateConfigProblems,
  MODEL_GATE_CONFIG_SCHEMA,
  type ModelGateConfig,
} from './gate-config.js';
export { GATE_HEADER, type GateOverrides, parseGateHeader } from './gate-header.js';
export type { StreamGate } from './stream-gate.js';
