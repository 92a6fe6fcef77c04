/**
 * Edge configuration: defaults < config file (JSON or YAML, `--config` / IOP_CONFIG) < environment
 * (`IOP_*`) < command-line flags. Layers merge field by field (objects key by key; a list is
 * replaced whole). The schema (config-schema.ts) gives the defaults, the checks and the names of
 * the flags and variables; an invalid config is refused with every problem named by its path
 * (`gate.models.qwen3.filters[0]`), never half applied.
 */
import {
  ConfigError,
  compileSchema,
  layerFromEnv,
  layerFromFlags,
  mergeConfigLayers,
  readConfigFile,
  withSources,
  type ConfigLayer,
} from '@iop/core';
import { gateConfigProblems } from '@iop/stream-gate';
import { poolConfigProblems } from './pool/pool-config.js';
import { recordsOfConfigKeys } from './keys/config-keys.js';
import { EDGE_BINDINGS, EDGE_CONFIG_SCHEMA } from './config-schema.js';
import type { EdgeConfig } from './edge-config.js';

export type { EdgeConfig };

const checkSchema = compileSchema(EDGE_CONFIG_SCHEMA);

/** Every default (from the schema). */
export const DEFAULT_CONFIG: EdgeConfig = checkSchema({}).value;

export { ConfigError, readConfigFile };

/** Where each value of a layer built from the environment or the flags came from, and what could not be read. */
const layerInfo = new WeakMap<object, ConfigLayer>();

function register(layer: ConfigLayer): Record<string, unknown> {
  layerInfo.set(layer.values, layer);
  return layer.values;
}

/** The settings the environment gives (`IOP_*` by the naming rule, and the older names). */
export function configFromEnv(env: NodeJS.ProcessEnv): Record<string, unknown> {
  return register(layerFromEnv(EDGE_BINDINGS, env));
}

/** The settings the flags give: `flags` maps each flag given (`--tunnel-port`, aliases too) to its value. */
export function configFromFlags(flags: ReadonlyMap<string, string | undefined>): Record<string, unknown> {
  return register(layerFromFlags(EDGE_BINDINGS, flags));
}

/** What the schema cannot check: relations between fields, the pool's references, filter options, keys. */
function crossCheck(config: EdgeConfig, schemaProblems: readonly string[]): string[] {
  const problems: string[] = [];
  const clean = (path: string) => !schemaProblems.some((problem) => problem.startsWith(path));
  if (clean('responsesStore') && config.responsesStore.maxResponseBytes > config.responsesStore.maxTotalBytes) {
    problems.push(
      `responsesStore.maxResponseBytes (${config.responsesStore.maxResponseBytes}) must not exceed responsesStore.maxTotalBytes (${config.responsesStore.maxTotalBytes})`,
    );
  }
  if (
    clean('maxRequestBytesInFlight') &&
    clean('maxBodyBytes') &&
    config.maxRequestBytesInFlight > 0 &&
    config.maxRequestBytesInFlight < config.maxBodyBytes
  ) {
    problems.push(
      `maxRequestBytesInFlight (${config.maxRequestBytesInFlight}) must be 0 (no budget) or at least maxBodyBytes (${config.maxBodyBytes}): a body at the limit could never be read`,
    );
  }
  if (clean('adminKeys') && clean('apiKeys') && config.adminKeys.some((key) => config.apiKeys.includes(key)))
    problems.push('adminKeys must not repeat a client API key (apiKeys)');
  if (clean('keys')) {
    try {
      recordsOfConfigKeys(config.keys); // repeated ids or keys, bad expiry times
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      problems.push(error.message.replace(/^invalid edge config: /, ''));
    }
  }
  if (clean('pool')) problems.push(...poolConfigProblems(config.pool, 'pool').problems);
  if (clean('gate.default')) problems.push(...gateConfigProblems(config.gate.default, 'gate.default'));
  for (const [model, gate] of Object.entries(config.gate.models)) {
    const path = `gate.models${/^[A-Za-z_$][A-Za-z0-9_$-]*$/.test(model) ? `.${model}` : `[${JSON.stringify(model)}]`}`;
    if (clean(path)) problems.push(...gateConfigProblems(gate, path));
  }
  return problems;
}

/**
 * Builds the effective config.
 * @param layers file contents, env overrides, flag overrides — later layers win, field by field.
 * @throws ConfigError naming every problem (path and limit) in one message.
 */
export function resolveConfig(...layers: Array<Record<string, unknown>>): EdgeConfig {
  const merged = mergeConfigLayers(...layers);
  // pool.retry.maxAttempts follows the top-level maxAttempts unless the pool section sets it.
  const pool = merged.pool as { retry?: { maxAttempts?: unknown } } | undefined;
  if (
    merged.maxAttempts !== undefined &&
    (typeof pool !== 'object' || pool === null || pool.retry?.maxAttempts === undefined)
  ) {
    merged.pool = mergeConfigLayers(
      typeof pool === 'object' && pool !== null ? (pool as Record<string, unknown>) : {},
      {
        retry: { maxAttempts: merged.maxAttempts },
      },
    );
  }
  const readProblems = layers.flatMap((layer) => layerInfo.get(layer)?.problems ?? []);
  const { value, problems } = checkSchema(merged);
  const all = [
    ...readProblems,
    ...withSources(
      problems,
      layers.map((layer) => layerInfo.get(layer)?.sources),
    ),
  ];
  try {
    all.push(...crossCheck(value, problems));
  } catch {
    // A section the schema refused can break a cross-check: its schema problems are reported.
  }
  if (all.length > 0) throw new ConfigError(`invalid edge config: ${all.join('; ')}`);
  return value;
}
