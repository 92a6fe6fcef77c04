/**
 * The pool section of the edge config: model groups (a client-facing name and aliases over one or
 * more served models, with fallbacks, a queue and an optional gate), direct OpenAI-compatible
 * providers, and the retry, outlier-ejection and prefix-affinity settings. Validated with ajv, with
 * defaults filled in; cross-references (fallbacks, contextFallback, unique names and aliases) are
 * checked after the schema. `ModelResolver.resolveModel(name)` maps a client's `model` to its group.
 *
 * Example:
 *   { "modelGroups": [{ "name": "qwen3-8b", "aliases": ["gpt-4o-mini"],
 *       "targets": [{ "model": "Qwen/Qwen3-8B", "agents": { "labels": { "gpu": "l4" } }, "weight": 1 }],
 *       "fallbacks": ["qwen3-32b"], "contextFallback": "qwen3-8b-128k",
 *       "queue": { "maxQueued": 256, "maxWaitMs": 30000 } }],
 *     "directProviders": [{ "id": "vllm-a", "baseUrl": "http://10.0.0.5:8000/v1", "models": ["Qwen/Qwen3-8B"],
 *       "maxConcurrency": 64, "weight": 1 }],
 *     "retry": { "maxAttempts": 3, "budgetRatio": 0.2, "minRetriesPerSecond": 5, "baseBackoffMs": 50, "overloadBackoffBaseMs": 500, "maxBackoffMs": 2000 },
 *     "outlier": { "consecutiveFailures": 5, "baseEjectionMs": 10000, "maxEjectionMs": 300000, "maxEjectedPercent": 50 },
 *     "affinity": { "enabled": true, "prefixMessages": 2, "loadFactor": 1.25 } }
 */
import Ajv from 'ajv';
import { ConfigError } from '../config-error.js';
import type { QueueConfig } from './admission-queue.js';
import type { OutlierConfig } from './outlier-detector.js';
import type { RetryConfig } from './retry-policy.js';

export interface ModelTarget {
  /** Served model id as the backends register it (e.g. `Qwen/Qwen3-8B`). */
  model: string;
  /** Only providers carrying these labels serve this target. */
  agents?: { labels: Record<string, string> };
  /** Share of the group's traffic relative to the other targets (default 1). */
  weight: number;
  /**
   * Tool-call ids the backend accepts: `any` (default), or `alnum9` for servers whose chat
   * template requires 9-character alphanumeric ids (Mistral models on vLLM). With `alnum9` the
   * edge rewrites the client's ids on the way in and restores them on the way out.
   */
  toolIdFormat?: 'any' | 'alnum9';
}

export interface ModelGroup {
  /** Client-facing model name. */
  name: string;
  /** Other client-facing names of the group (e.g. `gpt-4o-mini` for tools with fixed model lists). */
  aliases: string[];
  targets: ModelTarget[];
  /** Groups tried, in order, when no provider of this one can take the request. */
  fallbacks: string[];
  /** Group a request goes to when its prompt exceeds this group's context length. */
  contextFallback?: string;
  queue: QueueConfig;
  /** Stream-gate settings, opaque here. */
  gate?: Record<string, unknown>;
}

export interface DirectProviderConfig {
  id: string;
  /** OpenAI-compatible base URL, `http(s)://…/v1`. */
  baseUrl: string;
  apiKey?: string;
  /** Served model ids. */
  models: string[];
  maxConcurrency: number;
  weight: number;
  labels: Record<string, string>;
  /** Longest wait for a TCP/TLS connection, ms (default 10 000). */
  connectTimeoutMs: number;
  /** No first body byte within this time fails the attempt, ms (default 120 000; the edge's `firstByteTimeoutMs` wins when > 0). */
  firstByteTimeoutMs: number;
  /** No body byte for this long (between chunks) fails the run, ms (default 60 000). */
  idleTimeoutMs: number;
}

export interface AffinityConfig {
  enabled: boolean;
  /** Leading messages hashed into the affinity key (see `affinityKey`). */
  prefixMessages: number;
  /** Bounded-load factor c ≥ 1 (see `PrefixAffinity`). */
  loadFactor: number;
}

export interface PoolConfig {
  modelGroups: ModelGroup[];
  directProviders: DirectProviderConfig[];
  /** Queue of a model served without a group (default 256 waiters, 30 000 ms). */
  queue: QueueConfig;
  retry: RetryConfig;
  outlier: OutlierConfig;
  affinity: AffinityConfig;
}

const queueSchema = {
  type: 'object',
  additionalProperties: false,
  default: {},
  properties: {
    maxQueued: { type: 'integer', minimum: 0, maximum: 100_000, default: 256 },
    maxWaitMs: { type: 'integer', minimum: 0, maximum: 600_000, default: 30_000 },
  },
} as const;

const labelsSchema = { type: 'object', additionalProperties: { type: 'string' } } as const;

const schema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    modelGroups: {
      type: 'array',
      default: [],
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['name', 'targets'],
        properties: {
          name: { type: 'string', minLength: 1 },
          aliases: { type: 'array', items: { type: 'string', minLength: 1 }, default: [] },
          targets: {
            type: 'array',
            minItems: 1,
            items: {
              type: 'object',
              additionalProperties: false,
              required: ['model'],
              properties: {
                model: { type: 'string', minLength: 1 },
                agents: { type: 'object', additionalProperties: false, required: ['labels'], properties: { labels: labelsSchema } },
                weight: { type: 'number', exclusiveMinimum: 0, maximum: 1000, default: 1 },
                toolIdFormat: { enum: ['any', 'alnum9'] },
              },
            },
          },
          fallbacks: { type: 'array', items: { type: 'string', minLength: 1 }, default: [] },
          contextFallback: { type: 'string', minLength: 1 },
          queue: queueSchema,
          gate: { type: 'object' },
        },
      },
    },
    directProviders: {
      type: 'array',
      default: [],
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['id', 'baseUrl', 'models'],
        properties: {
          id: { type: 'string', minLength: 1 },
          baseUrl: { type: 'string', pattern: '^https?://[^\\s/]+' },
          apiKey: { type: 'string', minLength: 1 },
          models: { type: 'array', minItems: 1, items: { type: 'string', minLength: 1 } },
          maxConcurrency: { type: 'integer', minimum: 1, maximum: 100_000, default: 16 },
          weight: { type: 'number', exclusiveMinimum: 0, maximum: 1000, default: 1 },
          labels: { ...labelsSchema, default: {} },
          connectTimeoutMs: { type: 'integer', minimum: 1, maximum: 600_000, default: 10_000 },
          firstByteTimeoutMs: { type: 'integer', minimum: 1, maximum: 3_600_000, default: 120_000 },
          idleTimeoutMs: { type: 'integer', minimum: 1, maximum: 3_600_000, default: 60_000 },
        },
      },
    },
    queue: queueSchema,
    retry: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        maxAttempts: { type: 'integer', minimum: 1, maximum: 10, default: 3 },
        budgetRatio: { type: 'number', minimum: 0, maximum: 10, default: 0.2 },
        minRetriesPerSecond: { type: 'number', minimum: 0, maximum: 10_000, default: 5 },
        baseBackoffMs: { type: 'integer', minimum: 0, maximum: 60_000, default: 50 },
        overloadBackoffBaseMs: { type: 'integer', minimum: 0, maximum: 60_000, default: 500 },
        maxBackoffMs: { type: 'integer', minimum: 0, maximum: 600_000, default: 2000 },
      },
    },
    outlier: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        consecutiveFailures: { type: 'integer', minimum: 1, maximum: 1000, default: 5 },
        baseEjectionMs: { type: 'integer', minimum: 1, maximum: 3_600_000, default: 10_000 },
        maxEjectionMs: { type: 'integer', minimum: 1, maximum: 86_400_000, default: 300_000 },
        maxEjectedPercent: { type: 'number', minimum: 0, maximum: 100, default: 50 },
      },
    },
    affinity: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        enabled: { type: 'boolean', default: true },
        prefixMessages: { type: 'integer', minimum: 1, maximum: 64, default: 2 },
        loadFactor: { type: 'number', minimum: 1, maximum: 100, default: 1.25 },
      },
    },
  },
} as const;

const validate = new Ajv({ allErrors: true, useDefaults: true }).compile(schema);

/**
 * Validates a pool config section and fills in its defaults (the input is not modified).
 * @throws ConfigError naming every invalid field (`/retry/maxAttempts must be <= 10`), unknown
 *   field, duplicate name or alias, and dangling fallback.
 */
export function parsePoolConfig(raw: unknown): PoolConfig {
  const config: unknown = raw === undefined ? {} : structuredClone(raw);
  if (!validate(config)) {
    const problems = (validate.errors ?? []).map((error) => {
      const extra = error.keyword === 'additionalProperties' ? ` (${String((error.params as { additionalProperty?: unknown }).additionalProperty)})` : '';
      return `${error.instancePath || '/'} ${error.message ?? 'is invalid'}${extra}`;
    });
    throw new ConfigError(`invalid pool config: ${problems.join('; ')}`);
  }
  const pool = config as unknown as PoolConfig;
  const problems = crossCheck(pool);
  if (problems.length > 0) throw new ConfigError(`invalid pool config: ${problems.join('; ')}`);
  return pool;
}

function crossCheck(pool: PoolConfig): string[] {
  const problems: string[] = [];
  const names = new Map<string, string>();
  pool.modelGroups.forEach((group, i) => {
    for (const [field, name] of [['name', group.name] as const, ...group.aliases.map((alias, j) => [`aliases/${j}`, alias] as const)]) {
      const previous = names.get(name);
      if (previous !== undefined) problems.push(`/modelGroups/${i}/${field} \`${name}\` is already used by ${previous}`);
      else names.set(name, `/modelGroups/${i}`);
    }
  });
  const groupNames = new Set(pool.modelGroups.map((group) => group.name));
  pool.modelGroups.forEach((group, i) => {
    group.fallbacks.forEach((fallback, j) => {
      if (!groupNames.has(fallback)) problems.push(`/modelGroups/${i}/fallbacks/${j} \`${fallback}\` is not a model group name`);
      if (fallback === group.name) problems.push(`/modelGroups/${i}/fallbacks/${j} names its own group`);
    });
    if (group.contextFallback !== undefined) {
      if (!groupNames.has(group.contextFallback)) problems.push(`/modelGroups/${i}/contextFallback \`${group.contextFallback}\` is not a model group name`);
      if (group.contextFallback === group.name) problems.push(`/modelGroups/${i}/contextFallback names its own group`);
    }
  });
  const ids = new Set<string>();
  pool.directProviders.forEach((provider, i) => {
    if (ids.has(provider.id)) problems.push(`/directProviders/${i}/id \`${provider.id}\` is already used`);
    ids.add(provider.id);
  });
  if (pool.retry.maxBackoffMs < pool.retry.baseBackoffMs) problems.push('/retry/maxBackoffMs must be >= baseBackoffMs');
  if (pool.outlier.maxEjectionMs < pool.outlier.baseEjectionMs) problems.push('/outlier/maxEjectionMs must be >= baseEjectionMs');
  return problems;
}

export interface ResolvedModel {
  /** The configured group, or an implicit one-target group for a model served under its own name. */
  group: ModelGroup;
  targets: readonly ModelTarget[];
  /** True when `name` matched no group or alias. */
  implicit: boolean;
}

/** Maps client model names to model groups (by name or alias). */
export class ModelResolver {
  private readonly byName = new Map<string, ModelGroup>();

  constructor(private readonly config: PoolConfig) {
    for (const group of config.modelGroups) {
      this.byName.set(group.name, group);
      for (const alias of group.aliases) this.byName.set(alias, group);
    }
  }

  /**
   * The group a client's `model` names. Unknown names fall through to the served model of the same
   * name (an implicit group with the default queue, no fallbacks); whether anything serves it is
   * the router's question (404 `model_not_found` when nothing does).
   */
  resolveModel(name: string): ResolvedModel {
    const group = this.byName.get(name);
    if (group !== undefined) return { group, targets: group.targets, implicit: false };
    const implicit: ModelGroup = { name, aliases: [], targets: [{ model: name, weight: 1 }], fallbacks: [], queue: this.config.queue };
    return { group: implicit, targets: implicit.targets, implicit: true };
  }

  /** The configured group called `name` (not an alias), if any. */
  group(name: string): ModelGroup | undefined {
    const group = this.byName.get(name);
    return group?.name === name ? group : undefined;
  }

  /** Client-facing names (group names and aliases), for `GET /v1/models`. */
  names(): string[] {
    return [...this.byName.keys()];
  }
}
