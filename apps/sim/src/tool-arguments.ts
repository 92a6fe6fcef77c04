/**
 * Tool-call arguments generated from a tool's JSON Schema (`tools[].function.parameters`):
 * an object with every `required` property set to a value of the declared type (or an `enum` /
 * `const` value), nested objects and arrays likewise. Also the four kinds of invalid arguments
 * a weak model produces, used by the `invalid-tool-args` knob.
 */
import { randomIndex, type Random } from './prng.js';
import { LOREM_WORDS } from './lorem.js';

export type InvalidArgumentsKind = 'not-json' | 'wrong-type' | 'missing-required' | 'undeclared-tool';

/** Order in which invalid tool calls alternate. */
export const INVALID_ARGUMENTS_KINDS: readonly InvalidArgumentsKind[] = [
  'not-json',
  'wrong-type',
  'missing-required',
  'undeclared-tool',
];

/** A function tool declared in the request. */
export interface DeclaredTool {
  name: string;
  parameters: unknown;
}

/** One generated tool call. `invalid` names how its arguments (or name) were made invalid. */
export interface GeneratedToolCall {
  name: string;
  /** JSON text (or not, for `not-json`). */
  arguments: string;
  invalid: InvalidArgumentsKind | null;
}

type Schema = Record<string, unknown>;

const MAX_DEPTH = 8;

function asSchema(value: unknown): Schema | undefined {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Schema) : undefined;
}

function schemaType(schema: Schema): string | undefined {
  const type = schema.type;
  if (typeof type === 'string') return type;
  if (Array.isArray(type))
    return type.find((entry): entry is string => typeof entry === 'string' && entry !== 'null') ?? 'null';
  if (schema.properties !== undefined) return 'object';
  if (schema.items !== undefined) return 'array';
  return undefined;
}

function bounded(schema: Schema, fallbackLow: number, fallbackHigh: number): [number, number] {
  const low = typeof schema.minimum === 'number' ? schema.minimum : fallbackLow;
  const high = typeof schema.maximum === 'number' ? schema.maximum : Math.max(low, fallbackHigh);
  return [low, Math.max(low, high)];
}

/** A value that validates against `schema` (for the common subset of JSON Schema tool parameters). */
export function sampleValue(schemaValue: unknown, random: Random, depth = 0): unknown {
  const schema = asSchema(schemaValue);
  if (schema === undefined) return 'value';
  if ('const' in schema) return schema.const;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[randomIndex(random, schema.enum.length)];
  for (const key of ['anyOf', 'oneOf', 'allOf'] as const) {
    const options = schema[key];
    if (Array.isArray(options) && options.length > 0) return sampleValue(options[0], random, depth + 1);
  }
  switch (schemaType(schema)) {
    case 'string': {
      let text = LOREM_WORDS[randomIndex(random, LOREM_WORDS.length)]!;
      const minLength = typeof schema.minLength === 'number' ? schema.minLength : 0;
      while (text.length < minLength) text += 'x';
      return text;
    }
    case 'integer': {
      const [low, high] = bounded(schema, 1, 100);
      return Math.min(Math.floor(high), Math.ceil(low) + randomIndex(random, Math.floor(high - low) + 1));
    }
    case 'number': {
      const [low, high] = bounded(schema, 0, 100);
      return low + Math.round(random() * (high - low) * 100) / 100;
    }
    case 'boolean':
      return random() < 0.5;
    case 'null':
      return null;
    case 'array': {
      const minItems = typeof schema.minItems === 'number' ? schema.minItems : 1;
      const items: unknown[] = [];
      if (depth < MAX_DEPTH)
        for (let i = 0; i < Math.max(1, minItems); i++) items.push(sampleValue(schema.items, random, depth + 1));
      return items;
    }
    case 'object':
      return sampleObject(schema, random, depth);
    default:
      return 'value';
  }
}

function requiredNames(schema: Schema): string[] {
  return Array.isArray(schema.required)
    ? schema.required.filter((name): name is string => typeof name === 'string')
    : [];
}

function propertySchema(schema: Schema, name: string): unknown {
  return asSchema(schema.properties)?.[name];
}

function sampleObject(schema: Schema, random: Random, depth: number): Record<string, unknown> {
  const object: Record<string, unknown> = {};
  if (depth >= MAX_DEPTH) return object;
  for (const name of requiredNames(schema)) object[name] = sampleValue(propertySchema(schema, name), random, depth + 1);
  return object;
}

/** A value of a type the property schema does not allow. */
function wrongTypeValue(schemaValue: unknown): unknown {
  const schema = asSchema(schemaValue);
  const type = schema === undefined ? undefined : schemaType(schema);
  return type === 'string' ? 12345 : 'not-a-valid-value';
}

/**
 * Generates the arguments of one call to `tool`; `invalid` makes them invalid in that way.
 * `wrong-type` and `missing-required` need a required property; without one they fall back to
 * `not-json`. `undeclaredName` is used for `undeclared-tool`.
 */
export function generateToolCall(
  tool: DeclaredTool,
  random: Random,
  invalid: InvalidArgumentsKind | null,
  undeclaredName: string,
): GeneratedToolCall {
  const schema = asSchema(tool.parameters) ?? {};
  const values = sampleObject(schema, random, 0);
  const firstRequired = requiredNames(schema)[0];
  let kind = invalid;
  if ((kind === 'wrong-type' || kind === 'missing-required') && firstRequired === undefined) kind = 'not-json';
  switch (kind) {
    case 'wrong-type':
      values[firstRequired!] = wrongTypeValue(propertySchema(schema, firstRequired!));
      break;
    case 'missing-required':
      delete values[firstRequired!];
      break;
    default:
      break;
  }
  const json = JSON.stringify(values);
  return {
    name: kind === 'undeclared-tool' ? undeclaredName : tool.name,
    // Drop the closing brace and leave a dangling comma: a truncated object no parser accepts.
    arguments: kind === 'not-json' ? `${json.slice(0, -1)},` : json,
    invalid: kind,
  };
}
