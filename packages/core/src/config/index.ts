/** The configuration machinery the commands use (schema, layers, files, flags, the command). */
export { addBindingFlags } from './config-flags.js';
export {
  type Assert,
  compileSchema,
  ConfigError,
  publishedJsonSchema,
  type SameShape,
  stringEnum,
} from './config-schema.js';
export {
  type BindingAlias,
  type ConfigBinding,
  configBindings,
  type ConfigLayer,
  layerFromEnv,
  layerFromFlags,
  mergeConfigLayers,
  parseBindingValue,
  setPath,
  withSources,
} from './config-bindings.js';
export { iopCommand } from './command.js';
export { readConfigFile } from './config-file.js';
