export { startEdge, type RunningEdge } from './server.js';
export { resolveConfig, configFromEnv, readConfigFile, ConfigError, DEFAULT_CONFIG, type EdgeConfig } from './config.js';
