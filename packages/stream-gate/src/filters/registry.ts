/**
 * Filters by name, for configuration files: a model group lists `filters: ['reasoning', { name: 'text-tool-calls',
 * options: { formats: ['hermes', 'mistral'] } }, 'tool-calls', …]`.
 *
 * | name                | kind        | options                                 |
 * | ------------------- | ----------- | --------------------------------------- |
 * | `reasoning`         | transformer | `ReasoningExtractionOptions`            |
 * | `text-tool-calls`   | transformer | `TextToolCallOptions`                   |
 * | `tool-calls`        | both        | `ToolCallFilterOptions` (normalizer + validator) |
 * | `structured-output` | both        | `StructuredOutputOptions` (fence unwrap + validator) |
 * | `agent-output`      | one of both | `AgentOutputOptions` (`strict`, `streamBuffer`: validator;      |
 * |                     |             | `xmlCompletionTool`: transformer)       |
 * | `degeneration`      | validator   | `DegenerationOptions`                   |
 * | `empty-output`      | validator   | `EmptyOutputOptions`                    |
 *
 * Transformers run in the listed order; list `reasoning` before `text-tool-calls` (calls inside a `<think>` block are
 * reasoning, not calls).
 */
import { IopError } from '@iop/core';
import type { GateFilter } from '../filter.js';
import type { DegenerationOptions } from './degeneration.js';
import { degenerationGuard } from './degeneration.js';
import type { EmptyOutputOptions } from './empty-output.js';
import { emptyOutputGuard } from './empty-output.js';
import type { ReasoningExtractionOptions } from './reasoning-extraction.js';
import { reasoningExtraction } from './reasoning-extraction.js';
import type { StructuredOutputOptions } from './structured-output.js';
import { structuredOutput } from './structured-output.js';
import { jsonFenceUnwrap } from './json-fence.js';
import type { AgentOutputOptions } from './agent-output.js';
import { agentOutput } from './agent-output.js';
import { TEXT_TOOL_CALL_FORMATS } from './text-tool-call-formats.js';
import type { TextToolCallOptions } from './text-tool-calls.js';
import { textToolCalls } from './text-tool-calls.js';
import type { ToolCallFilterOptions } from './tool-calls.js';
import { toolCallFilters } from './tool-calls.js';

export type FilterSpec =
  | FilterName
  | { name: 'reasoning'; options?: ReasoningExtractionOptions }
  | { name: 'text-tool-calls'; options?: TextToolCallOptions }
  | { name: 'tool-calls'; options?: Omit<ToolCallFilterOptions, 'schemaCache'> }
  | { name: 'structured-output'; options?: Omit<StructuredOutputOptions, 'schemaCache'> }
  | { name: 'agent-output'; options: AgentOutputOptions }
  | { name: 'degeneration'; options?: DegenerationOptions }
  | { name: 'empty-output'; options?: EmptyOutputOptions };

export const FILTER_NAMES = [
  'reasoning',
  'text-tool-calls',
  'tool-calls',
  'structured-output',
  'agent-output',
  'degeneration',
  'empty-output',
] as const;
export type FilterName = (typeof FILTER_NAMES)[number];

/**
 * Builds the filters a config lists.
 * @throws IopError `invalid_request` (400, param `filters[i]`) for an unknown name or bad options.
 */
export function createFilters(specs: readonly FilterSpec[]): GateFilter[] {
  const filters: GateFilter[] = [];
  specs.forEach((spec, index) => {
    const name = typeof spec === 'string' ? spec : spec.name;
    const options: Record<string, unknown> =
      typeof spec === 'string' ? {} : ((spec.options ?? {}) as Record<string, unknown>);
    const param = `filters[${index}]`;
    try {
      filters.push(...create(name, options, param));
    } catch (error) {
      if (error instanceof IopError) throw error;
      throw new IopError('invalid_request', `${param}: ${error instanceof Error ? error.message : String(error)}`, {
        param,
      });
    }
  });
  return filters;
}

function create(name: string, options: Record<string, unknown>, param: string): GateFilter[] {
  switch (name) {
    case 'reasoning':
      return [reasoningExtraction(options as ReasoningExtractionOptions)];
    case 'text-tool-calls': {
      const formats = (options as TextToolCallOptions).formats;
      for (const format of formats ?? []) {
        if (!(format in TEXT_TOOL_CALL_FORMATS)) {
          throw new IopError(
            'invalid_request',
            `${param}: unknown text tool-call format "${format}" (known: ${Object.keys(TEXT_TOOL_CALL_FORMATS).join(', ')})`,
            {
              param,
            },
          );
        }
      }
      return [textToolCalls(options as TextToolCallOptions)];
    }
    case 'tool-calls':
      return toolCallFilters(options as ToolCallFilterOptions);
    case 'structured-output':
      return [jsonFenceUnwrap(), structuredOutput(options as StructuredOutputOptions)];
    case 'agent-output':
      return agentOutput(options as unknown as AgentOutputOptions);
    case 'degeneration':
      return [degenerationGuard(options as DegenerationOptions)];
    case 'empty-output':
      return [emptyOutputGuard(options as EmptyOutputOptions)];
    default:
      throw new IopError('invalid_request', `${param}: unknown filter "${name}" (known: ${FILTER_NAMES.join(', ')})`, {
        param,
      });
  }
}
