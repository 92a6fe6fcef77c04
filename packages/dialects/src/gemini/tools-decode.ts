/**
 * Gemini `tools` and `toolConfig` → hub tools and tool choice (docs/protocols.md "Gemini function
 * calling"; https://ai.google.dev/gemini-api/docs/function-calling).
 *
 * - `functionDeclarations[]`: `name` (`[A-Za-z0-9_.:-]`, at most 64 characters, unique),
 *   `description`, and the arguments' schema from `parametersJsonSchema` (JSON Schema, as Gemini
 *   CLI sends it: used as is) or `parameters` (Google's OpenAPI 3.0 subset, converted by
 *   `toJsonSchema`); neither is an empty object schema.
 * - Google's built-in tools (`googleSearch`, `codeExecution`, `urlContext`, …) have no equivalent
 *   on a chat backend: dropped with a warning.
 * - `functionCallingConfig.mode`: `AUTO` (default) → auto, `NONE` → none, `ANY` → required, or the
 *   one tool when `allowedFunctionNames` names one; `VALIDATED` (the model may call or answer) →
 *   auto. `allowedFunctionNames` limits the tools offered; a name no declaration has is a 400.
 */
import type { ToolChoice, ToolDefinition } from '@iop/core';
import { invalidRequest } from '@iop/core';
import { isAbsent, isObject, path, type JsonObject } from '../shared/fields.js';
import { assertJsonDepth } from '../shared/json-depth.js';
import { field, geminiFields } from './fields.js';

const { readArray, readEnum, readObject, readString } = geminiFields;

const NAME = /^[A-Za-z0-9_.:-]{1,64}$/;
const MODES = ['MODE_UNSPECIFIED', 'AUTO', 'ANY', 'NONE', 'VALIDATED'] as const;
/** Keys of Google's Schema that JSON Schema lacks or spells otherwise. */
const DROPPED_SCHEMA_KEYS = new Set(['propertyOrdering', 'example']);
const INT64_KEYS = new Set(['minItems', 'maxItems', 'minLength', 'maxLength', 'minProperties', 'maxProperties']);

/**
 * Google's `Schema` (OpenAPI 3.0 subset) → JSON Schema: `type` lowercased (`STRING` → `string`),
 * `nullable: true` → `"null"` added to `type`, the int64 counts sent as strings (`"3"`) → numbers,
 * `propertyOrdering` and `example` dropped; `properties`, `items` and `anyOf` converted in turn.
 * Property names are never changed.
 */
export function toJsonSchema(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(toJsonSchema);
  if (!isObject(schema)) return schema;
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(schema)) {
    if (DROPPED_SCHEMA_KEYS.has(key) || key === 'nullable') continue;
    if (key === 'type' && typeof value === 'string') out.type = value.toLowerCase();
    else if (INT64_KEYS.has(key) && typeof value === 'string' && /^\d+$/.test(value)) out[key] = Number(value);
    else if (key === 'properties' && isObject(value))
      out.properties = Object.fromEntries(Object.entries(value).map(([name, sub]) => [name, toJsonSchema(sub)]));
    else if (key === 'items' || key === 'anyOf') out[key] = toJsonSchema(value);
    else out[key] = value;
  }
  if (schema.nullable === true && typeof out.type === 'string') out.type = [out.type, 'null'];
  return out;
}

function decodeDeclaration(value: unknown, param: string): ToolDefinition {
  const declaration = readObject(value, param);
  const name = readString(declaration.name, path(param, 'name'));
  if (!NAME.test(name))
    throw invalidRequest(
      `Invalid value at '${path(param, 'name')}': a function name is 1 to 64 of [A-Za-z0-9_.:-]`,
      path(param, 'name'),
    );
  const tool: ToolDefinition = { name, parameters: { type: 'object', properties: {} }, origin: { kind: 'function' } };
  const description = field(declaration, 'description');
  if (!isAbsent(description)) tool.description = readString(description, path(param, 'description'));
  const jsonSchema = field(declaration, 'parametersJsonSchema');
  const schema = field(declaration, 'parameters');
  if (!isAbsent(jsonSchema)) {
    tool.parameters = readObject(jsonSchema, path(param, 'parametersJsonSchema'));
  } else if (!isAbsent(schema)) {
    tool.parameters = readObject(
      toJsonSchema(readObject(schema, path(param, 'parameters'))),
      path(param, 'parameters'),
    );
  }
  assertJsonDepth(tool.parameters, path(param, 'parameters'));
  return tool;
}

/** Decodes `tools`; built-in Google tools are dropped with a warning in `warnings`. @throws IopError 400. */
export function decodeTools(value: unknown, warnings: string[]): ToolDefinition[] {
  const tools: ToolDefinition[] = [];
  const names = new Set<string>();
  readArray(value, 'tools').forEach((item, i) => {
    const tool = readObject(item, path('tools', i));
    for (const key of Object.keys(tool)) {
      if (key !== 'functionDeclarations' && key !== 'function_declarations')
        warnings.push(`dropped tool ${key}: a Google built-in tool cannot run on this backend`);
    }
    const declarations = field(tool, 'functionDeclarations');
    if (isAbsent(declarations)) return;
    readArray(declarations, path('tools', i, 'functionDeclarations')).forEach((declaration, j) => {
      const decoded = decodeDeclaration(declaration, path('tools', i, 'functionDeclarations', j));
      if (names.has(decoded.name))
        throw invalidRequest(
          `Duplicate function declaration found: ${decoded.name}`,
          path('tools', i, 'functionDeclarations', j, 'name'),
        );
      names.add(decoded.name);
      tools.push(decoded);
    });
  });
  return tools;
}

/**
 * Decodes `toolConfig.functionCallingConfig` against the declared tools.
 * @returns the tool choice and the tools to offer (narrowed by `allowedFunctionNames`).
 * @throws IopError 400 for an unknown mode or a name no declaration has.
 */
export function decodeToolConfig(
  value: unknown,
  tools: ToolDefinition[],
): { toolChoice?: ToolChoice; tools: ToolDefinition[] } {
  const config = readObject(value, 'toolConfig');
  const calling = field(config, 'functionCallingConfig');
  if (isAbsent(calling)) return { tools };
  const param = 'toolConfig.functionCallingConfig';
  const callingConfig = readObject(calling, param);
  const modeValue = field(callingConfig, 'mode');
  const mode = isAbsent(modeValue) ? 'AUTO' : readEnum(modeValue, path(param, 'mode'), MODES);
  const allowedValue = field(callingConfig, 'allowedFunctionNames');
  let offered = tools;
  let allowed: string[] | undefined;
  if (!isAbsent(allowedValue)) {
    allowed = readArray(allowedValue, path(param, 'allowedFunctionNames')).map((name, i) =>
      readString(name, path(param, 'allowedFunctionNames', i)),
    );
    for (const [i, name] of allowed.entries()) {
      if (!tools.some((tool) => tool.name === name))
        throw invalidRequest(
          `Invalid value at '${path(param, 'allowedFunctionNames', i)}': no function declaration is named ${JSON.stringify(name)}`,
          path(param, 'allowedFunctionNames', i),
        );
    }
    if (allowed.length > 0) offered = tools.filter((tool) => allowed!.includes(tool.name));
  }
  switch (mode) {
    case 'NONE':
      return { toolChoice: { type: 'none' }, tools: offered };
    case 'ANY':
      if (offered.length === 0)
        throw invalidRequest(
          `Invalid value at '${path(param, 'mode')}': ANY needs at least one function declaration`,
          path(param, 'mode'),
        );
      return {
        toolChoice:
          offered.length === 1 && allowed?.length === 1
            ? { type: 'tool', name: offered[0]!.name }
            : { type: 'required' },
        tools: offered,
      };
    default:
      return { toolChoice: { type: 'auto' }, tools: offered };
  }
}
