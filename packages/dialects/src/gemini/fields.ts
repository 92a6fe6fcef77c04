/**
 * Field reading for Gemini bodies: the shared typed readers (shared/fields.ts) in Google's voice
 * (`Invalid value at 'generationConfig.temperature' …`), and the two spellings Google accepts for
 * a known field (proto3 JSON: lowerCamelCase, which the SDK sends, or the proto's snake_case,
 * which Google's REST samples use: `system_instruction`, `inline_data`). Only known field names
 * are read both ways; keys inside user data (`functionCall.args`, schemas) are never renamed.
 */
import { fieldReaders, typeName, type FieldWording, type JsonObject } from '../shared/fields.js';

export const geminiWording: FieldWording = {
  wrongType: (param, expected, value) => `Invalid value at '${param}': expected ${expected}, got ${typeName(value)}`,
  notInteger: (param, value) => `Invalid value at '${param}': expected an integer, got ${JSON.stringify(value)}`,
  outOfRange: (param, value, range) =>
    `Invalid value at '${param}': ${value} is out of range [${range.min ?? '-inf'}, ${range.max ?? 'inf'}]`,
  notOneOf: (param, allowed) => `Invalid value at '${param}': expected one of ${allowed.join(', ')}`,
};

export const geminiFields = fieldReaders(geminiWording);

/** `camelCase` → `snake_case`. */
function snake(name: string): string {
  return name.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);
}

/** The value of the known field `name` (lowerCamelCase) in either spelling. */
export function field(object: JsonObject, name: string): unknown {
  const value = object[name];
  return value === undefined ? object[snake(name)] : value;
}

/** Whether `key` is one of `names` in either spelling. */
export function isKnown(key: string, names: ReadonlySet<string>): boolean {
  return names.has(key) || names.has(key.replace(/_([a-z])/g, (_, letter: string) => letter.toUpperCase()));
}
