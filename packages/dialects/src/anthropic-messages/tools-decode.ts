/**
 * Anthropic `tools` and `tool_choice` → hub tool definitions and choice (docs/protocols.md "Messages request", "Tool
 * definitions and choice").
 *
 * - Custom tools (`type` absent, null or `"custom"`): `input_schema` (an object schema, docs/protocols.md "Messages
 *   request") is kept as is, `$schema` and every 2020-12 keyword included (docs/protocols.md "Claude Code"); the
 *   backend encoder strips what its backend cannot take. `cache_control` is dropped; `strict` passes through;
 *   `defer_loading: true` (tool search) marks a tool offered only once a `tool_reference` names it.
 * - Server tools (`web_search_…`, `bash_…`, `text_editor_…`, `code_execution_…`, …): a chat backend cannot run them, so
 *   400 `unsupported_field` naming `tools.N.type` (docs/protocols.md "What cannot be mapped").
 * - `tool_choice`: auto/any/tool/none → auto/required/tool/none; `disable_parallel_tool_use: true` →
 *   `parallelToolCalls: false` (docs/protocols.md "Tool definitions and choice").
 */
import type { ToolChoice, ToolDefinition } from '@iop/core';
import { IopError, invalidRequest } from '@iop/core';
import { anthropicFields, isAbsent, path } from '../shared/fields.js';
import { assertJsonDepth } from '../shared/json-depth.js';

const { readArray, readBoolean, readEnum, readObject, readString } = anthropicFields;

/** Decodes `tools`. @throws IopError 400 naming the field (e.g. `tools.2.input_schema.type`). */
export function decodeTools(value: unknown, param = 'tools'): ToolDefinition[] {
  const seen = new Set<string>();
  return readArray(value, param).map((item, i) => {
    const toolParam = path(param, i);
    const tool = readObject(item, toolParam);
    if (!isAbsent(tool.type)) {
      const type = readString(tool.type, path(toolParam, 'type'));
      if (type !== 'custom') {
        throw new IopError(
          'unsupported_field',
          `${toolParam}.type: server tool '${type}' cannot run on this model's backend; declare it as a custom tool with an input_schema`,
          { param: path(toolParam, 'type') },
        );
      }
    }
    const name = readString(tool.name, path(toolParam, 'name'));
    if (name.length === 0) throw invalidRequest(`${toolParam}.name: must not be empty`, path(toolParam, 'name'));
    if (seen.has(name))
      throw invalidRequest(`${toolParam}.name: tool names must be unique ('${name}')`, path(toolParam, 'name'));
    seen.add(name);
    const schemaParam = path(toolParam, 'input_schema');
    const parameters = readObject(tool.input_schema, schemaParam);
    assertJsonDepth(parameters, schemaParam);
    if (parameters.type !== 'object') {
      throw invalidRequest(`${schemaParam}.type: must be 'object'`, path(schemaParam, 'type'));
    }
    const definition: ToolDefinition = { name, parameters };
    if (!isAbsent(tool.description))
      definition.description = readString(tool.description, path(toolParam, 'description'));
    if (!isAbsent(tool.strict)) definition.strict = readBoolean(tool.strict, path(toolParam, 'strict'));
    if (!isAbsent(tool.defer_loading) && readBoolean(tool.defer_loading, path(toolParam, 'defer_loading')))
      definition.deferLoading = true;
    return definition;
  });
}

export interface DecodedToolChoice {
  toolChoice: ToolChoice;
  /** `false` when the client set `disable_parallel_tool_use: true`; otherwise undefined. */
  parallelToolCalls?: false;
}

/**
 * Decodes `tool_choice`. A `{type:"tool"}` choice must name a declared tool.
 * @throws IopError 400 naming `tool_choice.type`, `tool_choice.name` or `tool_choice.disable_parallel_tool_use`.
 */
export function decodeToolChoice(
  value: unknown,
  tools: readonly ToolDefinition[],
  param = 'tool_choice',
): DecodedToolChoice {
  const choice = readObject(value, param);
  const type = readEnum(choice.type, path(param, 'type'), ['auto', 'any', 'tool', 'none'] as const);
  let toolChoice: ToolChoice;
  if (type === 'tool') {
    const name = readString(choice.name, path(param, 'name'));
    if (!tools.some((tool) => tool.name === name)) {
      throw invalidRequest(`${param}.name: no tool named '${name}' in tools`, path(param, 'name'));
    }
    toolChoice = { type: 'tool', name };
  } else {
    toolChoice = { type: type === 'any' ? 'required' : type };
  }
  const result: DecodedToolChoice = { toolChoice };
  if (!isAbsent(choice.disable_parallel_tool_use)) {
    if (readBoolean(choice.disable_parallel_tool_use, path(param, 'disable_parallel_tool_use')))
      result.parallelToolCalls = false;
  }
  return result;
}
