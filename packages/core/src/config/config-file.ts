/**
 * Config files: JSON (`.json`) or YAML (`.yaml`, `.yml`, and any other name: YAML 1.2 reads JSON
 * too). A top-level `$schema` (the file naming its JSON Schema for editors) is dropped.
 */
import { readFileSync } from 'node:fs';
import type * as YamlModule from 'yaml';
import { ConfigError } from './config-schema.js';

/**
 * The YAML parser, loaded with the first YAML file: a process with a JSON config, or none, keeps yaml's 72 modules out
 * of memory.
 */
function parseYaml(text: string): unknown {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const yaml = require('yaml') as typeof YamlModule;
  // YAML 1.2's core schema: `yes`/`no` stay strings, duplicate keys are an error.
  return yaml.parse(text, { uniqueKeys: true, prettyErrors: true });
}

/** @throws ConfigError when the file cannot be read or parsed, or holds no object. */
export function readConfigFile(path: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    const text = readFileSync(path, 'utf8');
    parsed = path.endsWith('.json') ? JSON.parse(text) : parseYaml(text);
  } catch (error) {
    throw new ConfigError(`cannot read config file ${path}: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (parsed === null || parsed === undefined) return {};
  if (typeof parsed !== 'object' || Array.isArray(parsed))
    throw new ConfigError(`cannot read config file ${path}: it must hold an object of settings`);
  const { $schema: _schema, ...settings } = parsed as Record<string, unknown>;
  return settings;
}
