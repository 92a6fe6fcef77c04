/**
 * Structured output (name `structured-output`): when the request asks for `response_format`
 * `json_object` or `json_schema`, the answer's text must parse as JSON (an object for
 * `json_object`) and, for `json_schema`, be valid against the schema (ajv 2020-12, see
 * `schema-cache.ts`). By default it holds the text until the answer ends (`holdText`), so an
 * invalid document never reaches the client and can be retried with a corrective message.
 * Answers that call tools are not checked. A schema ajv cannot compile disables the check with a warning.
 */
import type { StreamEvent } from '@iop/core';
import type { EventValidator, Rejection, ValidatorFilter, Verdict } from '../filter.js';
import { reject } from '../filter.js';
import type { SchemaCache } from './schema-cache.js';
import { describeSchemaErrors, sharedSchemaCache } from './schema-cache.js';

export interface StructuredOutputOptions {
  /** Hold text until validated. Default true; false streams it and only rejects at the end. */
  holdText?: boolean;
  schemaCache?: SchemaCache;
}

export function structuredOutput(options: StructuredOutputOptions = {}): ValidatorFilter {
  const cache = options.schemaCache ?? sharedSchemaCache;
  const holdText = options.holdText !== false;
  return {
    kind: 'validator',
    name: 'structured-output',
    create(context) {
      const format = context.request.responseFormat;
      if (format === undefined || format.type === 'text') return PASS_ALL;
      const prefix = context.continuation?.text ?? '';
      return new StructuredOutputValidator(holdText, prefix, (value) => {
        if (format.type === 'json_object') {
          return value !== null && typeof value === 'object' && !Array.isArray(value)
            ? undefined
            : patchFor('the answer must be a JSON object');
        }
        const compiled = cache.get(format.schema);
        if (!compiled.ok) {
          context.warn(
            `structured-output: schema ${format.name} cannot be compiled, output not checked: ${compiled.error}`,
          );
          return undefined;
        }
        return compiled.validate(value)
          ? undefined
          : patchFor(
              `the answer does not match the schema ${format.name}: ${describeSchemaErrors(compiled.validate.errors)}`,
            );
      });
    },
  };
}

const PASS_ALL: EventValidator = { check: () => 'pass' };

function patchFor(problem: string): Rejection {
  return reject(problem, 'retry-with-patch', {
    patch: `Your previous answer was rejected: ${problem}. Reply again with only the JSON document, no code fences or prose.`,
  });
}

class StructuredOutputValidator implements EventValidator {
  private readonly parts: string[];
  private bytes = 0;
  private sawToolCall = false;

  constructor(
    private readonly holdText: boolean,
    prefix: string,
    private readonly checkValue: (value: unknown) => Rejection | undefined,
  ) {
    this.parts = prefix === '' ? [] : [prefix];
  }

  get heldBytes(): number {
    return this.holdText ? 0 : this.bytes; // when holding, the gate's queue holds the same text
  }

  check(event: StreamEvent): Verdict {
    switch (event.type) {
      case 'text-delta':
        this.parts.push(event.text);
        this.bytes += event.text.length;
        return this.holdText ? 'hold' : 'pass';
      case 'tool-call-delta':
        this.sawToolCall = true;
        return this.holdText ? 'hold' : 'pass';
      case 'finish':
        return this.sawToolCall ? 'pass' : this.validate();
      default:
        return this.holdText && this.parts.length > 0 ? 'hold' : 'pass';
    }
  }

  private validate(): Verdict {
    const text = this.parts.join('').trim();
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (error) {
      return patchFor(`the answer is not valid JSON (${error instanceof Error ? error.message : String(error)})`);
    }
    return this.checkValue(value) ?? 'pass';
  }
}
