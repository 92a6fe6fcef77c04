/**
 * Configuration defined once: each app (edge, agent) writes one TypeBox schema, and this module
 * derives from it the validator (every problem at once, each with its path, defaults filled in),
 * the environment and flag bindings (`config-bindings.ts`) and the published JSON Schema.
 *
 * Library: TypeBox (`@sinclair/typebox`, pinned at 0.34.52) with ajv 8 (already used for the pool,
 * the keys and the admin API). TypeBox builds plain JSON Schema objects and derives the TypeScript
 * types from them (`Static`), so the schema ajv validates is the very one written to
 * `schema/*.schema.json` for editors, with no conversion step; ajv reports every error with its
 * instance path (`allErrors`) and fills defaults (`useDefaults`). TypeBox 0.34 declares no
 * `engines` and needs nothing newer than ES2020, so it runs on Node 20. (zod v4 was the other
 * candidate: its `z.toJSONSchema` is a conversion with its own gaps, and the repo's existing ajv
 * schemas would have had to be rewritten rather than typed.)
 */
import Ajv, { type ErrorObject } from 'ajv';
import { Type, type Static, type TSchema, type TUnsafe } from '@sinclair/typebox';

/** An invalid configuration: the message names every problem, each with its path. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$-]*$/;

/**
 * A location in a config as people write it: `gate.models.qwen3.filters[0]`. Accepts a JSON
 * pointer (`/gate/models/qwen3/filters/0`, as ajv reports it) or a list of segments.
 */
export function configPath(location: string | readonly (string | number)[], prefix = ''): string {
  const segments =
    typeof location === 'string'
      ? location === ''
        ? []
        : location
            .slice(1)
            .split('/')
            .map((segment) => segment.replace(/~1/g, '/').replace(/~0/g, '~'))
      : location.map(String);
  let out = prefix;
  for (const segment of segments) {
    if (/^\d+$/.test(segment)) out += `[${segment}]`;
    else if (IDENTIFIER.test(segment)) out += out === '' ? segment : `.${segment}`;
    else out += `[${JSON.stringify(segment)}]`;
  }
  return out;
}

/** ajv's errors as `path message` lines (an unknown field is named by its own path). */
export function formatSchemaErrors(errors: readonly ErrorObject[] | null | undefined, prefix = ''): string[] {
  const lines: string[] = [];
  const all = errors ?? [];
  for (const error of all) {
    const path = configPath(error.instancePath, prefix);
    // "must match a schema in anyOf" / "must match "then" schema" add nothing when a more precise error names the same
    // place.
    if (
      (error.keyword === 'anyOf' || error.keyword === 'if' || error.keyword === 'oneOf') &&
      all.some(
        (other) =>
          other !== error && other.instancePath.startsWith(error.instancePath) && other.keyword !== error.keyword,
      )
    )
      continue;
    let line: string;
    if (error.keyword === 'propertyNames') continue; // the key's own error (below) names it
    if (error.propertyName !== undefined) {
      line = `${path || '(root)'} key ${JSON.stringify(error.propertyName)} ${error.message ?? 'is invalid'}`;
    } else if (error.keyword === 'additionalProperties') {
      const field = String((error.params as { additionalProperty?: unknown }).additionalProperty);
      line = `${configPath([field], path)} is not a known setting`;
    } else if (error.keyword === 'enum') {
      const allowed = (error.params as { allowedValues?: unknown[] }).allowedValues ?? [];
      line = `${path || '(root)'} must be one of ${allowed.map((value) => JSON.stringify(value)).join(', ')}`;
    } else {
      line = `${path || '(root)'} ${error.message ?? 'is invalid'}`;
    }
    if (!lines.includes(line)) lines.push(line);
  }
  return lines;
}

export interface SchemaCheck<T> {
  /** The input with defaults filled in (a copy; the input is not modified). Only typed when `problems` is empty. */
  value: T;
  problems: string[];
}

/**
 * A validator for `schema`: fills defaults into a copy of the input and lists every problem.
 * @param prefix put before each path (`pool` → `pool.retry.maxAttempts`).
 */
export function compileSchema<S extends TSchema>(schema: S): (raw: unknown, prefix?: string) => SchemaCheck<Static<S>> {
  // strict: false — schemas carry annotations (`description`, TypeBox's own markers) ajv need not know.
  const validate = new Ajv({ allErrors: true, useDefaults: true, strict: false }).compile(schema);
  return (raw, prefix = '') => {
    const value: unknown = raw === undefined ? {} : structuredClone(raw);
    const problems = validate(value) ? [] : formatSchemaErrors(validate.errors, prefix);
    return { value: value as Static<S>, problems };
  };
}

/**
 * The schema as published for editors (`schema/*.schema.json`): plain JSON, draft-07 (ajv's
 * default draft), with `$id` and `title`, and a root `$schema` property so a config file may name
 * its schema.
 */
export function publishedJsonSchema(
  schema: TSchema,
  meta: { id: string; title: string; description?: string },
): Record<string, unknown> {
  // A property with a default may be left out of a file: not `required` for an editor (ajv fills the default before it
  // checks).
  const plain = JSON.parse(JSON.stringify(schema), (_key, value: unknown) => {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return value;
    const node = value as { required?: string[]; properties?: Record<string, { default?: unknown }> };
    if (node.required === undefined || node.properties === undefined) return value;
    const required = node.required.filter((name) => node.properties?.[name]?.default === undefined);
    const { required: _required, ...rest } = node;
    return required.length === 0 ? rest : { ...rest, required };
  }) as Record<string, unknown>;
  const properties = {
    $schema: { type: 'string', description: 'The JSON Schema of this file (for editors; ignored by iop).' },
    ...(plain.properties as object),
  };
  return {
    $schema: 'http://json-schema.org/draft-07/schema#',
    $id: meta.id,
    title: meta.title,
    ...(meta.description === undefined ? {} : { description: meta.description }),
    ...plain,
    properties,
  };
}

/** A string enum as one JSON Schema `enum` (one clear error, not one per member). */
export function stringEnum<const T extends readonly string[]>(
  values: T,
  options: Record<string, unknown> = {},
): TUnsafe<T[number]> {
  return Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...options });
}

/** Compile-time check that a schema's type and a hand-written interface have the same shape. */
export type SameShape<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
/** `const _: Assert<SameShape<X, Y>> = true;` fails to compile when X and Y drift apart. */
export type Assert<T extends true> = T;
