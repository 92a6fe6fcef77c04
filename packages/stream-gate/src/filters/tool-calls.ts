/**
 * Tool-call filters (name `tool-calls`):
 * - a normalizer (transformer): a call whose arguments are still empty when the turn finishes gets
 *   `{}` (a parameterless call is `{}` in every dialect, docs/protocols.md "Chat stream"; calls may interleave by
 *   index, so this waits for the finish); the finish reason itself follows what was delivered
 *   (`deliveredFinishReason`, applied by the gate to every answer);
 * - a validator: holds tool-call fragments until the answer ends, then checks each call — name
 *   declared in the request's tools, arguments parse as JSON, arguments valid against the tool's
 *   JSON Schema — and `parallel_tool_calls: false` (at most one call); `tool_choice` is the
 *   always-on `tool-choice` filter's (`tool-choice.ts`). A failure is
 *   retried with a corrective message for the model. A turn cut by the output limit (`length`)
 *   passes as generated: a retry under the same limit cannot do better, and the client learns of
 *   the limit from its stop reason (`max_tokens`, `length`, `incomplete`).
 */
import type { StreamEvent, ToolDefinition } from '@iop/core';
import type {
  EventTransformer,
  EventValidator,
  Rejection,
  TransformerFilter,
  ValidatorFilter,
  Verdict,
} from '../filter.js';
import { reject } from '../filter.js';
import type { SchemaCache } from './schema-cache.js';
import { describeSchemaErrors, sharedSchemaCache } from './schema-cache.js';
import { ToolCallAccumulator } from './tool-call-accumulator.js';
import type { AccumulatedToolCall } from './tool-call-accumulator.js';

export interface ToolCallFilterOptions {
  /** Whether to validate arguments against the tool's JSON Schema. Default true. */
  validateSchema?: boolean;
  /** Compiled-schema cache; default the process-wide one. */
  schemaCache?: SchemaCache;
}

/** The normalizer and the validator, in that order. */
export function toolCallFilters(options: ToolCallFilterOptions = {}): [TransformerFilter, ValidatorFilter] {
  return [toolCallNormalizer(), toolCallValidator(options)];
}

export function toolCallNormalizer(): TransformerFilter {
  return { kind: 'transformer', name: 'tool-call-normalizer', create: () => new ToolCallNormalizer() };
}

class ToolCallNormalizer implements EventTransformer {
  readonly heldBytes = 0;
  /** Per call index, whether it got non-blank arguments (calls may interleave by index). */
  private readonly hasArguments = new Map<number, boolean>();

  push(event: StreamEvent, out: StreamEvent[]): undefined {
    if (event.type === 'tool-call-delta') {
      if (event.argumentsDelta.trim() !== '') this.hasArguments.set(event.index, true);
      else if (!this.hasArguments.has(event.index)) this.hasArguments.set(event.index, false);
      out.push(event);
    } else if (event.type === 'finish') {
      // Only a finished turn gets `{}` for a parameterless call: cut by the output limit, a call is left as generated.
      if (event.reason !== 'length') {
        for (const [index, has] of this.hasArguments)
          if (!has) out.push({ type: 'tool-call-delta', index, argumentsDelta: '{}' });
      }
      out.push(event);
    } else {
      out.push(event);
    }
    return undefined;
  }
}

export function toolCallValidator(options: ToolCallFilterOptions = {}): ValidatorFilter {
  const cache = options.schemaCache ?? sharedSchemaCache;
  const validateSchema = options.validateSchema !== false;
  return {
    kind: 'validator',
    name: 'tool-calls',
    create(context) {
      const tools = new Map<string, ToolDefinition>();
      for (const tool of context.request.tools ?? []) tools.set(tool.name, tool);
      const warned = new Set<string>();
      const checkSchema = (call: AccumulatedToolCall, value: unknown, tool: ToolDefinition): Rejection | undefined => {
        if (!validateSchema) return undefined;
        const compiled = cache.get(tool.parameters);
        if (!compiled.ok) {
          if (!warned.has(tool.name)) {
            warned.add(tool.name);
            context.warn(
              `tool-calls: schema of tool ${tool.name} cannot be compiled, arguments not checked: ${compiled.error}`,
            );
          }
          return undefined;
        }
        if (compiled.validate(value)) return undefined;
        const errors = describeSchemaErrors(compiled.validate.errors);
        return reject(`arguments of ${call.name} do not match its schema: ${errors}`, 'retry-with-patch', {
          patch:
            `Your previous reply called the tool "${call.name}" with arguments that do not match its JSON Schema: ${errors}. ` +
            'Call the tool again with arguments that satisfy the schema.',
        });
      };
      return new ToolCallValidator(context.request.parallelToolCalls, tools, checkSchema);
    },
  };
}

class ToolCallValidator implements EventValidator {
  private readonly tracker = new ToolCallAccumulator();

  constructor(
    private readonly parallelToolCalls: boolean | undefined,
    private readonly tools: ReadonlyMap<string, ToolDefinition>,
    private readonly checkSchema: (
      call: AccumulatedToolCall,
      value: unknown,
      tool: ToolDefinition,
    ) => Rejection | undefined,
  ) {}

  get heldBytes(): number {
    return 0; // the arguments it keeps are the held events' own strings
  }

  check(event: StreamEvent): Verdict {
    if (event.type === 'tool-call-delta') {
      this.tracker.push(event);
      return 'hold';
    }
    if (event.type === 'finish') return event.reason === 'length' ? 'pass' : this.validateAll();
    return this.tracker.size > 0 ? 'hold' : 'pass';
  }

  private validateAll(): Verdict {
    const calls = this.tracker.calls();
    if (this.parallelToolCalls === false && calls.length > 1) {
      return reject(`${calls.length} tool calls although parallel_tool_calls is false`, 'retry-with-patch', {
        patch: 'Call at most one tool per reply.',
      });
    }
    for (const call of calls) {
      const rejection = this.validateCall(call);
      if (rejection !== undefined) return rejection;
    }
    return 'pass';
  }

  private validateCall(call: AccumulatedToolCall): Rejection | undefined {
    if (call.name === '') return reject(`tool call ${call.index} has no name`, 'retry-exact');
    const tool = this.tools.get(call.name);
    if (tool === undefined) {
      const declared = [...this.tools.keys()].join(', ') || 'none';
      return reject(`tool ${call.name} is not declared`, 'retry-with-patch', {
        patch: `The tool "${call.name}" does not exist. Available tools: ${declared}. Use only these tools.`,
      });
    }
    const text = call.arguments.trim() === '' ? '{}' : call.arguments;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (error) {
      const detail = error instanceof Error ? error.message : String(error);
      return reject(`arguments of ${call.name} are not valid JSON: ${detail}`, 'retry-with-patch', {
        patch: `Your previous reply called the tool "${call.name}" with arguments that are not valid JSON (${detail}). Call it again with a JSON object as arguments.`,
      });
    }
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      return reject(`arguments of ${call.name} are not a JSON object`, 'retry-with-patch', {
        patch: `The arguments of the tool "${call.name}" must be a JSON object. Call it again.`,
      });
    }
    return this.checkSchema(call, value, tool);
  }
}
