/**
 * The pool section of the edge config: model groups (a client-facing name and aliases over one or more served models,
 * with fallbacks, a queue and an optional gate), direct OpenAI-compatible providers, and the retry, outlier-ejection
 * and prefix-affinity settings. Its schema (`POOL_SCHEMA`, TypeBox, see @iop/core's config-schema.ts) is part of the
 * edge config schema; defaults are filled in; cross-references (fallbacks, contextFallback, unique names and aliases)
 * are checked after the schema (`ModelResolver`, model-resolver.ts, maps a client's `model` to its group).
 *
 * Example: { "modelGroups": [{ "name": "qwen3-8b", "aliases": ["gpt-4o-mini"], "targets": [{ "model": "Qwen/Qwen3-8B",
 * "agents": { "labels": { "gpu": "l4" } }, "weight": 1 }], "fallbacks": ["qwen3-32b"], "contextFallback":
 * "qwen3-8b-128k", "queue": { "maxQueued": 256, "maxWaitMs": 30000 } }], "directProviders": [{ "id": "vllm-a",
 * "baseUrl": "http://10.0.0.5:8000/v1", "models": ["Qwen/Qwen3-8B"], "maxConcurrency": 64, "weight": 1 }], "retry": {
 * "maxAttempts": 3, "budgetRatio": 0.2, "minRetriesPerSecond": 5, "baseBackoffMs": 50, "overloadBackoffBaseMs": 500,
 * "maxBackoffMs": 2000 }, "outlier": { "consecutiveFailures": 5, "baseEjectionMs": 10000, "maxEjectionMs": 300000,
 * "maxEjectedPercent": 50 }, "affinity": { "enabled": true, "prefixMessages": 2, "loadFactor": 1.25 } }
 */
import { Type, type Static } from '@sinclair/typebox';
import { compileSchema, stringEnum, type Assert, type SameShape } from '@iop/core';
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
  /**
   * No first body byte within this time fails the attempt, ms (default 120 000; the edge's `firstByteTimeoutMs` wins
   * when > 0).
   */
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
  /** Prompt tokens a provider of weight 1 prefills per second: the cache-aware pick's cost (resident-pick.ts). */
  prefillTokensPerS: number;
}

export interface PoolConfig {
  modelGroups: ModelGroup[];
  directProviders: DirectProviderConfig[];
  /** Queue of a model served without a group (default 256 waiters, 30 000 ms). */
  queue: QueueConfig;
  retry: RetryConfig;
  outlier: OutlierConfig;
  affinity: AffinityConfig;
  /**
   * How a request without an affinity key picks among a group's providers: `p2c` (live load) or `round-robin` (a
   * baseline for comparisons).
   */
  balancer: 'p2c' | 'round-robin';
}

const queueSchema = Type.Object(
  {
    maxQueued: Type.Integer({
      minimum: 0,
      maximum: 100_000,
      default: 256,
      description: 'Waiters allowed (0 = refuse at once when no slot is free).',
    }),
    maxWaitMs: Type.Integer({
      minimum: 0,
      maximum: 600_000,
      default: 30_000,
      description: 'Longest wait for a slot, ms.',
    }),
  },
  { additionalProperties: false, default: {} },
);

const labelsSchema = Type.Record(Type.String(), Type.String());

const modelTargetSchema = Type.Object(
  {
    model: Type.String({
      minLength: 1,
      description: 'Served model id as the backends register it (e.g. `Qwen/Qwen3-8B`).',
    }),
    agents: Type.Optional(
      Type.Object(
        { labels: labelsSchema },
        { additionalProperties: false, description: 'Only providers carrying these labels serve this target.' },
      ),
    ),
    weight: Type.Number({
      exclusiveMinimum: 0,
      maximum: 1000,
      default: 1,
      description: "Share of the group's traffic relative to the other targets.",
    }),
    toolIdFormat: Type.Optional(
      stringEnum(['any', 'alnum9'] as const, {
        description:
          'Tool-call ids the backend accepts: `any`, or `alnum9` (Mistral models on vLLM): the edge rewrites ids on the way in and restores them on the way out.',
      }),
    ),
  },
  { additionalProperties: false },
);

const modelGroupSchema = Type.Object(
  {
    name: Type.String({ minLength: 1, description: 'Client-facing model name.' }),
    aliases: Type.Array(Type.String({ minLength: 1 }), {
      default: [],
      description: 'Other client-facing names of the group.',
    }),
    targets: Type.Array(modelTargetSchema, { minItems: 1 }),
    fallbacks: Type.Array(Type.String({ minLength: 1 }), {
      default: [],
      description: 'Groups tried, in order, when no provider of this one can take the request.',
    }),
    contextFallback: Type.Optional(
      Type.String({
        minLength: 1,
        description: "Group a request goes to when its prompt exceeds this group's context length.",
      }),
    ),
    queue: queueSchema,
    gate: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), { description: 'Stream-gate settings of the group.' }),
    ),
  },
  { additionalProperties: false },
);

const directProviderSchema = Type.Object(
  {
    id: Type.String({ minLength: 1 }),
    baseUrl: Type.String({
      pattern: '^https?://[^\\s/]+',
      description: 'OpenAI-compatible base URL, `http(s)://…/v1`.',
    }),
    apiKey: Type.Optional(Type.String({ minLength: 1 })),
    models: Type.Array(Type.String({ minLength: 1 }), { minItems: 1, description: 'Served model ids.' }),
    maxConcurrency: Type.Integer({ minimum: 1, maximum: 100_000, default: 16 }),
    weight: Type.Number({ exclusiveMinimum: 0, maximum: 1000, default: 1 }),
    labels: Type.Record(Type.String(), Type.String(), { default: {} }),
    connectTimeoutMs: Type.Integer({
      minimum: 1,
      maximum: 600_000,
      default: 10_000,
      description: 'Longest wait for a TCP/TLS connection, ms.',
    }),
    firstByteTimeoutMs: Type.Integer({
      minimum: 1,
      maximum: 3_600_000,
      default: 120_000,
      description:
        "No first body byte within this time fails the attempt, ms (the edge's `firstByteTimeoutMs` wins when > 0).",
    }),
    idleTimeoutMs: Type.Integer({
      minimum: 1,
      maximum: 3_600_000,
      default: 60_000,
      description: 'No body byte for this long (between chunks) fails the run, ms.',
    }),
  },
  { additionalProperties: false },
);

const retrySchema = Type.Object(
  {
    maxAttempts: Type.Integer({
      minimum: 1,
      maximum: 10,
      default: 3,
      description: 'Attempts per request, the first included (1 = no retry); defaults to the top-level `maxAttempts`.',
    }),
    budgetRatio: Type.Number({
      minimum: 0,
      maximum: 10,
      default: 0.2,
      description: 'Pool-wide retries per client request.',
    }),
    minRetriesPerSecond: Type.Number({
      minimum: 0,
      maximum: 10_000,
      default: 5,
      description: 'Pool-wide retries per second allowed whatever the traffic.',
    }),
    baseBackoffMs: Type.Integer({
      minimum: 0,
      maximum: 60_000,
      default: 50,
      description: 'Backoff of the first retry before jitter, ms.',
    }),
    overloadBackoffBaseMs: Type.Integer({
      minimum: 0,
      maximum: 60_000,
      default: 500,
      description:
        'Backoff of the first retry of a 429 / 503 without `Retry-After` on the same provider, before jitter, ms.',
    }),
    maxBackoffMs: Type.Integer({
      minimum: 0,
      maximum: 600_000,
      default: 2000,
      description: 'Largest backoff, ms; also the longest `Retry-After` waited for.',
    }),
  },
  { additionalProperties: false, default: {} },
);

const outlierSchema = Type.Object(
  {
    consecutiveFailures: Type.Integer({
      minimum: 1,
      maximum: 1000,
      default: 5,
      description: 'Failures in a row that eject a provider.',
    }),
    baseEjectionMs: Type.Integer({
      minimum: 1,
      maximum: 3_600_000,
      default: 10_000,
      description: 'First ejection time, ms.',
    }),
    maxEjectionMs: Type.Integer({
      minimum: 1,
      maximum: 86_400_000,
      default: 300_000,
      description: 'Longest ejection time, ms.',
    }),
    maxEjectedPercent: Type.Number({
      minimum: 0,
      maximum: 100,
      default: 50,
      description: "Largest share of a group's providers out at once, percent.",
    }),
  },
  { additionalProperties: false, default: {} },
);

const affinitySchema = Type.Object(
  {
    enabled: Type.Boolean({
      default: true,
      description: 'Route requests that share a prompt prefix to the same provider (bounded load).',
    }),
    prefixMessages: Type.Integer({
      minimum: 1,
      maximum: 64,
      default: 2,
      description: 'Leading messages hashed into the affinity key.',
    }),
    loadFactor: Type.Number({ minimum: 1, maximum: 100, default: 1.25, description: 'Bounded-load factor c >= 1.' }),
    prefillTokensPerS: Type.Number({
      minimum: 1,
      default: 10_000,
      description:
        'Prompt tokens a provider of weight 1 prefills per second (cache-aware routing weighs a cache hit on a busy agent against recomputing on an idle one).',
    }),
  },
  { additionalProperties: false, default: {} },
);

const poolSchema = Type.Object(
  {
    modelGroups: Type.Array(modelGroupSchema, {
      default: [],
      description:
        'Model groups: a client-facing name and aliases over one or more served models, with fallbacks, a queue and an optional gate.',
    }),
    directProviders: Type.Array(directProviderSchema, {
      default: [],
      description: 'OpenAI-compatible servers the edge calls directly (no agent).',
    }),
    queue: { ...queueSchema, description: 'Queue of a model served without a group.' },
    retry: retrySchema,
    outlier: outlierSchema,
    affinity: affinitySchema,
    balancer: stringEnum(['p2c', 'round-robin'] as const, {
      default: 'p2c',
      description:
        'Without an affinity key: power of two choices on live load (p2c), or round-robin (a baseline to compare routing with).',
    }),
  },
  {
    additionalProperties: false,
    default: {},
    description:
      'Provider pool: model groups and aliases, direct providers, fallbacks, queue, retry, outlier ejection and prefix affinity.',
  },
);

// The schema and the types other modules consume stay in step (a drift fails to compile).
const _shape: [
  Assert<SameShape<Static<typeof modelTargetSchema>, ModelTarget>>,
  Assert<SameShape<Static<typeof modelGroupSchema>, ModelGroup>>,
  Assert<SameShape<Static<typeof directProviderSchema>, DirectProviderConfig>>,
  Assert<SameShape<Static<typeof queueSchema>, QueueConfig>>,
  Assert<SameShape<Static<typeof outlierSchema>, OutlierConfig>>,
  Assert<SameShape<Static<typeof affinitySchema>, AffinityConfig>>,
  Assert<Static<typeof poolSchema> extends PoolConfig ? true : false>,
  // RetryConfig's overloadBackoffBaseMs is optional for other callers; the parsed value always has it.
  Assert<Static<typeof retrySchema> extends RetryConfig ? true : false>,
] = [true, true, true, true, true, true, true, true];

/**
 * The pool section's schema (part of the edge config schema, `config-schema.ts`), typed by the checked `PoolConfig`.
 */
export const POOL_SCHEMA = Type.Unsafe<PoolConfig>(poolSchema);

const checkSchema = compileSchema(POOL_SCHEMA);

/**
 * Validates a pool config section and fills in its defaults (the input is not modified).
 * @param path where the section sits, for the messages (`pool` in the edge config).
 * @throws ConfigError naming every invalid field (`retry.maxAttempts must be <= 10`), unknown
 *   field, duplicate name or alias, and dangling fallback.
 */
export function parsePoolConfig(raw: unknown, path = ''): PoolConfig {
  const problems = poolConfigProblems(raw, path);
  if (problems.problems.length > 0) throw new ConfigError(`invalid pool config: ${problems.problems.join('; ')}`);
  return problems.value;
}

/** Every problem of a pool section (schema, then cross-references), and the section with its defaults. */
export function poolConfigProblems(raw: unknown, path = ''): { value: PoolConfig; problems: string[] } {
  const { value, problems } = checkSchema(raw, path);
  const pool = value as unknown as PoolConfig;
  if (problems.length > 0) return { value: pool, problems };
  return { value: pool, problems: crossCheck(pool, path === '' ? '' : `${path}.`) };
}

/** @param at the section's path and a dot (`pool.`), or nothing. */
function crossCheck(pool: PoolConfig, at: string): string[] {
  const problems: string[] = [];
  const names = new Map<string, string>();
  pool.modelGroups.forEach((group, i) => {
    for (const [field, name] of [
      ['name', group.name] as const,
      ...group.aliases.map((alias, j) => [`aliases[${j}]`, alias] as const),
    ]) {
      const previous = names.get(name);
      if (previous !== undefined)
        problems.push(`${at}modelGroups[${i}].${field} \`${name}\` is already used by ${previous}`);
      else names.set(name, `${at}modelGroups[${i}]`);
    }
  });
  const groupNames = new Set(pool.modelGroups.map((group) => group.name));
  pool.modelGroups.forEach((group, i) => {
    group.fallbacks.forEach((fallback, j) => {
      if (!groupNames.has(fallback))
        problems.push(`${at}modelGroups[${i}].fallbacks[${j}] \`${fallback}\` is not a model group name`);
      if (fallback === group.name) problems.push(`${at}modelGroups[${i}].fallbacks[${j}] names its own group`);
    });
    if (group.contextFallback !== undefined) {
      if (!groupNames.has(group.contextFallback))
        problems.push(`${at}modelGroups[${i}].contextFallback \`${group.contextFallback}\` is not a model group name`);
      if (group.contextFallback === group.name)
        problems.push(`${at}modelGroups[${i}].contextFallback names its own group`);
    }
  });
  const ids = new Set<string>();
  pool.directProviders.forEach((provider, i) => {
    if (ids.has(provider.id)) problems.push(`${at}directProviders[${i}].id \`${provider.id}\` is already used`);
    ids.add(provider.id);
  });
  if (pool.retry.maxBackoffMs < pool.retry.baseBackoffMs)
    problems.push(`${at}retry.maxBackoffMs must be >= ${at}retry.baseBackoffMs`);
  if (pool.outlier.maxEjectionMs < pool.outlier.baseEjectionMs)
    problems.push(`${at}outlier.maxEjectionMs must be >= ${at}outlier.baseEjectionMs`);
  return problems;
}
