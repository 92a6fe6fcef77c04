/**
 * Environment-variable and flag bindings, derived from a config schema (one table for both).
 *
 * Naming rule: a setting's config path gives its names. Flag: `--` and the path's segments in
 * kebab case joined by `-` (`tunnel.port` → `--tunnel-port`); environment variable: `IOP_` and the
 * segments in upper snake case joined by `_` (`IOP_TUNNEL_PORT`). The same setting on the edge
 * and the agent has the same path, hence the same names (`logLevel` → `--log-level`,
 * `IOP_LOG_LEVEL`). Older names stay accepted as aliases (`--tls-cert` for `tunnel.tlsCertFile`);
 * when both are set, the rule's name wins.
 *
 * Every leaf of the schema is bound: an object with named properties is walked into, anything
 * else is a leaf. Values are strings: numbers and booleans are parsed, a list of strings is
 * comma-separated (or a JSON array), string pairs are `k=v,k2=v2` (or a JSON object), and other
 * values (lists of objects, maps) are JSON.
 */
import type { TSchema } from '@sinclair/typebox';

export type BindingKind = 'string' | 'number' | 'boolean' | 'list' | 'pairs' | 'scalar' | 'json';

export interface BindingAlias {
  flag?: string;
  env?: string;
  /**
   * Settings this name also sets (`IOP_STORAGE_POSTGRES_URL` sets `storage.sql.kind` to `postgres`), by dotted path.
   */
  implies?: Record<string, unknown>;
}

export interface ConfigBinding {
  path: readonly string[];
  /** Dotted config path, `tunnel.port`. */
  field: string;
  /** `--tunnel-port`. */
  flag: string;
  /** `IOP_TUNNEL_PORT`. */
  env: string;
  aliases: readonly BindingAlias[];
  kind: BindingKind;
  description: string;
  default?: unknown;
}

const kebab = (segment: string) => segment.replace(/([a-z0-9])([A-Z])/g, '$1-$2').toLowerCase();
const snake = (segment: string) => kebab(segment).replace(/-/g, '_').toUpperCase();

type Json = Record<string, unknown>;

function kindOf(schema: Json): BindingKind {
  const type = schema.type;
  if (type === 'integer' || type === 'number') return 'number';
  if (type === 'boolean') return 'boolean';
  if (
    type === 'string' ||
    typeof schema.const === 'string' ||
    (Array.isArray(schema.enum) && schema.enum.every((value) => typeof value === 'string'))
  )
    return 'string';
  if (type === 'array') return kindOf((schema.items as Json | undefined) ?? {}) === 'string' ? 'list' : 'json';
  const anyOf =
    (schema.anyOf as Json[] | undefined) ??
    (schema.then !== undefined && schema.else !== undefined ? [schema.then as Json, schema.else as Json] : undefined);
  if (anyOf !== undefined) {
    const kinds = new Set(anyOf.map(kindOf));
    if (kinds.size === 1) return [...kinds][0]!;
    if ([...kinds].every((kind) => kind === 'string' || kind === 'number')) return 'scalar';
  }
  const values = [
    schema.additionalProperties,
    ...Object.values((schema.patternProperties as Json | undefined) ?? {}),
  ].filter((value): value is Json => typeof value === 'object' && value !== null);
  if (
    type === 'object' &&
    schema.properties === undefined &&
    values.length > 0 &&
    values.every((value) => value.type === 'string')
  )
    return 'pairs';
  return 'json';
}

/**
 * The bindings of every leaf of `schema`.
 * @param aliases older names by dotted path.
 */
export function configBindings(
  schema: TSchema,
  aliases: Record<string, readonly BindingAlias[]> = {},
): ConfigBinding[] {
  const out: ConfigBinding[] = [];
  const walk = (node: Json, path: string[]) => {
    const properties = node.properties as Record<string, Json> | undefined;
    if (
      node.type === 'object' &&
      properties !== undefined &&
      (path.length === 0 || Object.keys(properties).length > 0)
    ) {
      for (const [key, child] of Object.entries(properties)) walk(child, [...path, key]);
      return;
    }
    const field = path.join('.');
    out.push({
      path,
      field,
      flag: `--${path.map(kebab).join('-')}`,
      env: `IOP_${path.map(snake).join('_')}`,
      aliases: aliases[field] ?? [],
      kind: kindOf(node),
      description: typeof node.description === 'string' ? node.description : '',
      ...(node.default === undefined ? {} : { default: node.default }),
    });
  };
  walk(schema as unknown as Json, []);
  const unknown = Object.keys(aliases).filter((field) => !out.some((binding) => binding.field === field));
  if (unknown.length > 0) throw new Error(`aliases for settings the schema lacks: ${unknown.join(', ')}`);
  return out;
}

const NUMBER = /^-?\d+(\.\d+)?([eE][+-]?\d+)?$/;

/** A binding's string value as a config value, or a problem naming the source. */
export function parseBindingValue(
  binding: ConfigBinding,
  raw: string,
  source: string,
): { value: unknown } | { problem: string } {
  const text = raw.trim();
  const bad = (expected: string) => ({
    problem: `${binding.field} (${source}) must be ${expected}, got ${JSON.stringify(raw)}`,
  });
  const json = () => {
    try {
      return { value: JSON.parse(text) as unknown };
    } catch (error) {
      return {
        problem: `${binding.field} (${source}) must be JSON: ${error instanceof Error ? error.message : String(error)}`,
      };
    }
  };
  switch (binding.kind) {
    case 'number':
      return NUMBER.test(text) ? { value: Number(text) } : bad('a number');
    case 'boolean':
      if (/^(true|1|yes|on)$/i.test(text)) return { value: true };
      if (/^(false|0|no|off)$/i.test(text)) return { value: false };
      return bad('true or false');
    case 'list':
      return text.startsWith('[')
        ? json()
        : {
            value: text
              .split(',')
              .map((item) => item.trim())
              .filter((item) => item !== ''),
          };
    case 'pairs': {
      if (text.startsWith('{')) return json();
      const pairs: Record<string, string> = {};
      for (const pair of text.split(',').filter((item) => item.trim() !== '')) {
        const at = pair.indexOf('=');
        if (at <= 0) return bad('k=v pairs separated by commas');
        pairs[pair.slice(0, at).trim()] = pair.slice(at + 1).trim();
      }
      return { value: pairs };
    }
    case 'scalar':
      return { value: NUMBER.test(text) ? Number(text) : raw };
    case 'json':
      return json();
    default:
      return { value: raw };
  }
}

/** A layer of config values (from the environment or the flags) with where each came from. */
export interface ConfigLayer {
  values: Record<string, unknown>;
  /** Dotted path → the variable or flag that set it. */
  sources: Map<string, string>;
  problems: string[];
}

/** Sets `value` at a dotted or segmented path, creating objects on the way. */
export function setPath(target: Record<string, unknown>, path: readonly string[] | string, value: unknown): void {
  const segments = typeof path === 'string' ? path.split('.') : path;
  let node = target;
  segments.slice(0, -1).forEach((segment) => {
    const next = node[segment];
    if (typeof next !== 'object' || next === null || Array.isArray(next)) node[segment] = {};
    node = node[segment] as Record<string, unknown>;
  });
  node[segments[segments.length - 1]!] = value;
}

/**
 * Reads the bindings' values from `lookup` (an environment or the parsed flags). For each setting
 * its aliases are read first, then its rule name, so the rule name wins. Empty values are unset.
 */
function readLayer(
  bindings: readonly ConfigBinding[],
  names: (binding: ConfigBinding) => Array<{ name: string; implies?: Record<string, unknown> }>,
  lookup: (name: string) => string | undefined,
): ConfigLayer {
  const layer: ConfigLayer = { values: {}, sources: new Map(), problems: [] };
  for (const binding of bindings) {
    for (const { name, implies } of names(binding)) {
      const raw = lookup(name);
      if (raw === undefined || raw === '') continue;
      const parsed = parseBindingValue(binding, raw, name);
      if ('problem' in parsed) {
        layer.problems.push(parsed.problem);
        continue;
      }
      for (const [field, value] of Object.entries(implies ?? {})) {
        setPath(layer.values, field, value);
        layer.sources.set(field, name);
      }
      setPath(layer.values, binding.path, parsed.value);
      layer.sources.set(binding.field, name);
    }
  }
  return layer;
}

/** The settings an environment gives (`IOP_*`, aliases included). */
export function layerFromEnv(bindings: readonly ConfigBinding[], env: NodeJS.ProcessEnv): ConfigLayer {
  return readLayer(
    bindings,
    (binding) => [
      ...binding.aliases
        .filter((alias) => alias.env !== undefined)
        .map((alias) => ({ name: alias.env!, ...(alias.implies === undefined ? {} : { implies: alias.implies }) })),
      { name: binding.env },
    ],
    (name) => env[name],
  );
}

/** The settings given as flags: `flags` maps a flag (`--tunnel-port`, aliases included) to its value. */
export function layerFromFlags(
  bindings: readonly ConfigBinding[],
  flags: ReadonlyMap<string, string | undefined>,
): ConfigLayer {
  return readLayer(
    bindings,
    (binding) => [
      ...binding.aliases
        .filter((alias) => alias.flag !== undefined)
        .map((alias) => ({ name: alias.flag!, ...(alias.implies === undefined ? {} : { implies: alias.implies }) })),
      { name: binding.flag },
    ],
    (name) => flags.get(name),
  );
}

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Later layers win field by field: objects merge key by key, anything else (lists included) is replaced. */
export function mergeConfigLayers(
  ...layers: ReadonlyArray<Record<string, unknown> | undefined>
): Record<string, unknown> {
  const merge = (base: Record<string, unknown>, override: Record<string, unknown>): Record<string, unknown> => {
    const out: Record<string, unknown> = { ...base };
    for (const [key, value] of Object.entries(override)) {
      if (value === undefined) continue;
      const current = out[key];
      out[key] = isPlainObject(current) && isPlainObject(value) ? merge(current, value) : value;
    }
    return out;
  };
  return layers.reduce<Record<string, unknown>>(
    (merged, layer) => (layer === undefined ? merged : merge(merged, layer)),
    {},
  );
}

/**
 * Names the variable or flag behind each problem whose path one of them set: `port must be <= 65535
 * (from IOP_PORT)`. `sources`: the layers' source maps, later layers winning.
 */
export function withSources(
  problems: readonly string[],
  sources: ReadonlyArray<ReadonlyMap<string, string> | undefined>,
): string[] {
  return problems.map((problem) => {
    for (const map of [...sources].reverse()) {
      for (const [field, name] of map ?? []) {
        if (
          problem.startsWith(`${field} `) ||
          problem.startsWith(`${field}.`) ||
          problem.startsWith(`${field}[`) ||
          problem.startsWith(`${field}:`)
        )
          return `${problem} (from ${name})`;
      }
    }
    return problem;
  });
}

/** A help line for a binding: its description, its environment variable and its default. */
export function bindingHelp(binding: ConfigBinding): string {
  const names = [binding.env, ...binding.aliases.map((alias) => alias.env).filter((name) => name !== undefined)];
  const fallback =
    binding.default === undefined ||
    (typeof binding.default === 'object' && Object.keys(binding.default as object).length === 0)
      ? ''
      : `, default ${typeof binding.default === 'string' ? binding.default : JSON.stringify(binding.default)}`;
  const kind =
    binding.kind === 'json'
      ? ' (JSON)'
      : binding.kind === 'list'
        ? ' (comma-separated)'
        : binding.kind === 'pairs'
          ? ' (k=v,...)'
          : '';
  return `${binding.description}${kind} (config ${binding.field}; env ${names.join(', ')}${fallback})`;
}
