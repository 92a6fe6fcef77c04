export { startEdge, type RunningEdge } from './server.js';
export {
  resolveConfig,
  configFromEnv,
  configFromFlags,
  readConfigFile,
  ConfigError,
  DEFAULT_CONFIG,
  type EdgeConfig,
} from './config.js';
export { EDGE_BINDINGS, EDGE_CONFIG_SCHEMA, edgeJsonSchema } from './config-schema.js';
