/**
 * Compiled JSON Schema validators, compiled once per schema and cached. Real clients send draft
 * 2020-12 schemas (`$schema`, `anyOf`+`const`, `propertyNames`, `format`, `pattern`) and MCP
 * servers often draft-07 ones, so the validator is ajv's 2020-12 build with ajv-formats and the
 * draft-07 meta-schema added, `strict: false` (unknown keywords are ignored, as the APIs do).
 *
 * `pattern`, `patternProperties` and `propertyNames.pattern` run on `linearRegExp` (RE2, linear
 * time), never on V8's backtracking `RegExp`: the schema is the client's and the string the
 * model's, so a pattern like `^(a+)+$` must not stall the event loop. A pattern RE2 cannot
 * compile (backreference, lookahead) makes the schema not compilable: its check is disabled
 * with a warning. `format: "regex"` keeps ajv-formats' check, which only compiles the string as
 * an ECMA-262 regex (the format's definition, 2020-12 Validation §7.3.8) and never runs it.
 *
 * Cache: a WeakMap by schema object (the same request across attempts) in front of an LRU by the
 * schema's JSON (the same tool set across requests). Compiled schemas are removed from ajv's own
 * registry right after compiling, so memory stays bounded by the LRU.
 */
import Ajv2020 from 'ajv/dist/2020';
import type { ErrorObject, ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import draft07MetaSchema from 'ajv/dist/refs/json-schema-draft-07.json';
import { linearRegExp } from './linear-regexp.js';

/** A compiled schema, or why it could not be compiled (the check is then disabled). */
export type CompiledSchema = { ok: true; validate: ValidateFunction } | { ok: false; error: string };

/** Default number of compiled schemas kept by JSON text. */
const DEFAULT_MAX_ENTRIES = 512;

export class SchemaCache {
  private ajvInstance: Ajv2020 | undefined;
  private readonly byObject = new WeakMap<object, CompiledSchema>();
  private readonly byJson = new Map<string, CompiledSchema>();

  constructor(private readonly maxEntries = DEFAULT_MAX_ENTRIES) {}

  /**
   * ajv, set up with the first schema compiled: the process-wide cache exists in every edge while
   * most never check a schema, and an instance with the formats and the draft-07 meta-schema holds
   * about 0.7 MiB.
   */
  private ajv(): Ajv2020 {
    if (this.ajvInstance === undefined) {
      this.ajvInstance = new Ajv2020({
        strict: false,
        allErrors: true,
        validateFormats: true,
        code: { regExp: linearRegExp },
      });
      addFormats(this.ajvInstance);
      this.ajvInstance.addMetaSchema(draft07MetaSchema);
    }
    return this.ajvInstance;
  }

  /** The compiled validator for `schema` (compiling it on first use). Never throws. */
  get(schema: Record<string, unknown>): CompiledSchema {
    const known = this.byObject.get(schema);
    if (known !== undefined) return known;
    const json = JSON.stringify(schema);
    let compiled = this.byJson.get(json);
    if (compiled !== undefined) {
      this.byJson.delete(json); // refresh its LRU position
    } else {
      compiled = this.compile(schema);
      if (this.byJson.size >= this.maxEntries) this.byJson.delete(this.byJson.keys().next().value as string);
    }
    this.byJson.set(json, compiled);
    this.byObject.set(schema, compiled);
    return compiled;
  }

  private compile(schema: Record<string, unknown>): CompiledSchema {
    try {
      const validate = this.ajv().compile(schema);
      return { ok: true, validate };
    } catch (error) {
      return { ok: false, error: error instanceof Error ? error.message : String(error) };
    } finally {
      try {
        this.ajv().removeSchema(schema);
      } catch {
        // nothing registered under it
      }
    }
  }
}

/** ajv errors as one line: `/unit must be equal to one of the allowed values; /days must be integer`. */
export function describeSchemaErrors(errors: readonly ErrorObject[] | null | undefined, limit = 5): string {
  if (errors == null || errors.length === 0) return 'does not match the schema';
  const parts: string[] = [];
  for (const error of errors.slice(0, limit)) {
    const path = error.instancePath === '' ? '(root)' : error.instancePath;
    let detail = error.message ?? 'is invalid';
    if (error.keyword === 'enum' && Array.isArray(error.params.allowedValues)) {
      detail += `: ${JSON.stringify(error.params.allowedValues)}`;
    } else if (error.keyword === 'additionalProperties') {
      detail += `: ${String(error.params.additionalProperty)}`;
    }
    parts.push(`${path} ${detail}`);
  }
  if (errors.length > limit) parts.push(`and ${errors.length - limit} more`);
  return parts.join('; ');
}

/** The process-wide cache the built-in filters use. */
export const sharedSchemaCache = new SchemaCache();
