/**
 * Responses `tools` and `tool_choice` → hub tools (docs/protocols.md "Responses request", "Tool definitions and
 * choice", "Codex CLI").
 *
 * - `function` (flat: `{type, name, description?, parameters, strict}`) → a function tool.
 * - `namespace` (`{name, description, tools:[function|custom]}`): each member becomes its own backend tool named
 *   `<namespace>__<name>` (`backendToolName`), origin `namespace` (or `custom` with the namespace), so calls map back
 *   to `{name, namespace}`.
 * - `custom` (freeform text, optionally a grammar): a function with one required string argument `input`; the grammar
 *   is described to the model, not enforced (warning).
 * - Hosted tools a chat backend cannot run (`web_search`, `tool_search`, `file_search`, …) are dropped with a warning:
 *   a 400 here stops Codex CLI entirely.
 * - `tool_choice`: `auto`/`none`/`required`, `{type:"function"|"custom", name}`, `{type:"allowed_tools", mode, tools}`
 *   (filters `tools`); forcing a hosted tool is a 400.
 */
import { createHash } from 'node:crypto';
import { IopError, invalidRequest, type ToolChoice, type ToolDefinition, type ToolOrigin } from '@iop/core';
import { openaiFields, type JsonObject } from '../shared/fields.js';
import { assertJsonDepth } from '../shared/json-depth.js';

const { optionalBoolean, optionalString, readArray, readObject, readString } = openaiFields;

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const MAX_NAME_CHARS = 64;
const NAMESPACE_SEPARATOR = '__';
const EMPTY_PARAMETERS: Record<string, unknown> = { type: 'object', properties: {} };

/**
 * The backend name of a namespace member: `<namespace>__<name>` when that is a valid OpenAI
 * function name (`[a-zA-Z0-9_-]`, at most 64 chars); otherwise the sanitized name cut to 55 chars
 * plus `_` and 8 hex chars of a SHA-256 of both parts, so it stays unique and deterministic.
 */
export function backendToolName(namespace: string, name: string): string {
  const joined = `${namespace}${NAMESPACE_SEPARATOR}${name}`;
  if (TOOL_NAME.test(joined)) return joined;
  const hash = createHash('sha256').update(`${namespace}\0${name}`).digest('hex').slice(0, 8);
  return `${joined.replace(/[^a-zA-Z0-9_-]/g, '_').slice(0, MAX_NAME_CHARS - 9)}_${hash}`;
}

function customParameters(tool: JsonObject, param: string, warnings: string[]): Record<string, unknown> {
  let description = 'The tool input as free-form text.';
  if (tool.format !== undefined && tool.format !== null) {
    const format = readObject(tool.format, `${param}.format`);
    if (format.type === 'grammar') {
      const syntax = optionalString(format.syntax, `${param}.format.syntax`) ?? 'lark';
      const definition = readString(format.definition, `${param}.format.definition`);
      description = `The tool input as free-form text. It must match this ${syntax} grammar:\n${definition}`;
      warnings.push(`custom tool ${String(tool.name)}: the ${syntax} grammar is described to the model, not enforced`);
    }
  }
  return {
    type: 'object',
    properties: { input: { type: 'string', description } },
    required: ['input'],
    additionalProperties: false,
  };
}

function functionTool(tool: JsonObject, param: string, backendName: string, origin: ToolOrigin): ToolDefinition {
  const definition: ToolDefinition = { name: backendName, parameters: EMPTY_PARAMETERS, origin };
  if (tool.parameters !== undefined && tool.parameters !== null) {
    definition.parameters = readObject(tool.parameters, `${param}.parameters`);
    assertJsonDepth(definition.parameters, `${param}.parameters`);
  }
  const description = optionalString(tool.description, `${param}.description`);
  if (description !== undefined) definition.description = description;
  const strict = optionalBoolean(tool.strict, `${param}.strict`);
  if (strict !== undefined) definition.strict = strict;
  return definition;
}

function customTool(
  tool: JsonObject,
  param: string,
  backendName: string,
  origin: ToolOrigin,
  warnings: string[],
): ToolDefinition {
  const definition: ToolDefinition = { name: backendName, parameters: customParameters(tool, param, warnings), origin };
  const description = optionalString(tool.description, `${param}.description`);
  if (description !== undefined) definition.description = description;
  return definition;
}

function memberName(tool: JsonObject, param: string): string {
  const name = readString(tool.name, `${param}.name`);
  if (name.length === 0) throw invalidRequest(`${param}.name must not be empty`, `${param}.name`);
  return name;
}

function topLevelName(tool: JsonObject, param: string): string {
  const name = readString(tool.name, `${param}.name`);
  if (!TOOL_NAME.test(name)) throw invalidRequest(`${param}.name must match ^[a-zA-Z0-9_-]{1,64}$`, `${param}.name`);
  return name;
}

function namespaceTools(tool: JsonObject, param: string, warnings: string[]): ToolDefinition[] {
  const namespace = memberName(tool, param);
  return readArray(tool.tools, `${param}.tools`).map((raw, j) => {
    const memberParam = `${param}.tools[${j}]`;
    const member = readObject(raw, memberParam);
    const name = memberName(member, memberParam);
    const backendName = backendToolName(namespace, name);
    if (member.type === 'function')
      return functionTool(member, memberParam, backendName, { kind: 'namespace', namespace, name });
    if (member.type === 'custom')
      return customTool(member, memberParam, backendName, { kind: 'custom', namespace, name }, warnings);
    throw invalidRequest(
      `${memberParam}.type must be "function" or "custom", got ${JSON.stringify(member.type)}`,
      `${memberParam}.type`,
    );
  });
}

/** Decodes `tools`; hosted tools are dropped and reported in `warnings`. @throws IopError 400 naming the field. */
export function decodeTools(value: unknown, warnings: string[]): ToolDefinition[] {
  const tools: ToolDefinition[] = [];
  const seen = new Set<string>();
  readArray(value, 'tools').forEach((raw, i) => {
    const param = `tools[${i}]`;
    const tool = readObject(raw, param);
    const type = readString(tool.type, `${param}.type`);
    let decoded: ToolDefinition[];
    if (type === 'function') {
      if (tool.function !== undefined) {
        throw invalidRequest(
          `${param}: Responses function tools are flat ({type, name, parameters}), not Chat's {type, function:{…}}`,
          `${param}.name`,
        );
      }
      decoded = [functionTool(tool, param, topLevelName(tool, param), { kind: 'function' })];
    } else if (type === 'custom') {
      const name = topLevelName(tool, param);
      decoded = [customTool(tool, param, name, { kind: 'custom' }, warnings)];
    } else if (type === 'namespace') {
      decoded = namespaceTools(tool, param, warnings);
    } else {
      warnings.push(`dropped tool ${param} (${type}): a chat backend cannot run it`);
      return;
    }
    for (const definition of decoded) {
      if (seen.has(definition.name))
        throw invalidRequest(`${param}: duplicate tool name ${definition.name}`, `${param}.name`);
      seen.add(definition.name);
      tools.push(definition);
    }
  });
  return tools;
}

/** The backend name a `{type:"function"|"custom", name, namespace?}` reference points at, if declared. */
function resolveToolReference(reference: JsonObject, param: string, tools: readonly ToolDefinition[]): string {
  const name = readString(reference.name, `${param}.name`);
  const namespace = optionalString(reference.namespace, `${param}.namespace`);
  const wanted = namespace === undefined ? name : backendToolName(namespace, name);
  const match =
    tools.find((tool) => tool.name === wanted) ??
    tools.find(
      (tool) =>
        tool.origin?.kind !== 'function' &&
        tool.origin !== undefined &&
        'name' in tool.origin &&
        tool.origin.name === name,
    );
  if (match === undefined)
    throw invalidRequest(`${param}.name: no tool named ${JSON.stringify(name)} in tools`, `${param}.name`);
  return match.name;
}

function hostedChoice(type: string, param: string): IopError {
  return new IopError('unsupported_field', `${param}: the hosted tool ${type} cannot be forced on this server`, {
    param,
  });
}

/**
 * Decodes `tool_choice`. `allowed_tools` narrows `tools` (returned) to the listed ones.
 * @throws IopError 400 naming `tool_choice` (unknown form, undeclared tool, hosted tool).
 */
export function decodeToolChoice(
  value: unknown,
  tools: ToolDefinition[],
): { choice: ToolChoice | undefined; tools: ToolDefinition[] } {
  if (value === undefined || value === null) return { choice: undefined, tools };
  if (typeof value === 'string') {
    if (value === 'auto' || value === 'none' || value === 'required') return { choice: { type: value }, tools };
    throw invalidRequest(
      `tool_choice must be "auto", "none", "required" or an object, got ${JSON.stringify(value)}`,
      'tool_choice',
    );
  }
  const choice = readObject(value, 'tool_choice');
  const type = readString(choice.type, 'tool_choice.type');
  if (type === 'function' || type === 'custom')
    return { choice: { type: 'tool', name: resolveToolReference(choice, 'tool_choice', tools) }, tools };
  if (type === 'allowed_tools') {
    const mode = choice.mode ?? 'auto';
    if (mode !== 'auto' && mode !== 'required')
      throw invalidRequest('tool_choice.mode must be "auto" or "required"', 'tool_choice.mode');
    const allowed = new Set<string>();
    readArray(choice.tools, 'tool_choice.tools').forEach((raw, i) => {
      const param = `tool_choice.tools[${i}]`;
      const reference = readObject(raw, param);
      if (reference.type === 'function' || reference.type === 'custom')
        allowed.add(resolveToolReference(reference, param, tools));
      else if (reference.type === 'namespace') {
        const namespace = readString(reference.name, `${param}.name`);
        for (const tool of tools)
          if (tool.origin !== undefined && 'namespace' in tool.origin && tool.origin.namespace === namespace)
            allowed.add(tool.name);
      } else throw hostedChoice(String(reference.type), param);
    });
    return { choice: { type: mode }, tools: tools.filter((tool) => allowed.has(tool.name)) };
  }
  throw hostedChoice(type, 'tool_choice');
}
