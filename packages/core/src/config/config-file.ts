/**
 * Config files: JSON (`.json`) or YAML (`.yaml`, `.yml`, and any other name: YAML 1.2 reads JSON
 * too). A top-level `$schema` (the file naming its JSON Schema for editors) is dropped.
 */
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { ConfigError } from './config-schema.js';

/** @throws ConfigError when the file cannot be read or parsed, or holds no object. */
export function readConfigFile(path: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    const text = readFileSync(path, 'utf8');
    // YAML 1.2's core schema: `yes`/`no` stay strings, duplicate keys are an error.
    parsed = path.endsWith('.json') ? JSON.parse(text) : parseYaml(text, { uniqueKeys: true, prettyErrors: true });
  } catch (error) {
    throw new ConfigError(`cannot read config file ${path}: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (parsed === null || parsed === undefined) return {};
  if (typeof parsed !== 'object' || Array.isArray(parsed)) throw new ConfigError(`cannot read config file ${path}: it must hold an object of settings`);
  const { $schema: _schema, ...settings } = parsed as Record<string, unknown>;
  return settings;
}
