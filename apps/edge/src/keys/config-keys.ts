/**
 * The config file's `keys`: keys with policy, given as the key itself (`key`, hashed on load and
 * never kept) or as its SHA-256 (`keyHash`, so the file need not hold secrets). Each needs a
 * stable `id` (ledger rows and stored Responses follow it) and a `name`.
 */
import { ConfigError } from '../config-error.js';
import { hashKey, type ApiKeyRecord, type KeyBudget, type KeyLimits } from './api-key.js';

export interface ConfigKey {
  id: string;
  name: string;
  key?: string;
  keyHash?: string;
  owner?: string;
  models?: string[];
  limits?: KeyLimits;
  budget?: KeyBudget;
  /** RFC 3339 time. */
  expiresAt?: string;
}

const LIMITS = {
  type: 'object',
  additionalProperties: false,
  properties: {
    requestsPerMinute: { type: 'integer', minimum: 1 },
    tokensPerMinute: { type: 'integer', minimum: 1 },
    maxConcurrentStreams: { type: 'integer', minimum: 1 },
  },
} as const;

// A token budget, a money budget (USD at the price table), or both.
const BUDGET = {
  type: 'object',
  additionalProperties: false,
  required: ['period'],
  properties: {
    maxTokens: { type: 'integer', minimum: 1 },
    maxCostUsd: { type: 'number', exclusiveMinimum: 0, maximum: 1_000_000_000 },
    period: { enum: ['day', 'month', 'total'] },
  },
  anyOf: [{ required: ['maxTokens'] }, { required: ['maxCostUsd'] }],
} as const;

/** JSON Schema of one key's policy (shared by the config file and the admin API). */
export const KEY_POLICY_PROPERTIES = {
  name: { type: 'string', minLength: 1, maxLength: 200 },
  owner: { type: 'string', maxLength: 200 },
  models: { type: 'array', items: { type: 'string', minLength: 1 } },
  limits: LIMITS,
  budget: BUDGET,
  // RFC 3339; checked with Date.parse (recordsOfConfigKeys, admin/key-routes.ts).
  expiresAt: { type: 'string', minLength: 10, maxLength: 40 },
} as const;

export const CONFIG_KEYS_SCHEMA = {
  type: 'array',
  items: {
    type: 'object',
    additionalProperties: false,
    required: ['id', 'name'],
    properties: {
      id: { type: 'string', pattern: '^[A-Za-z0-9_.:-]{1,100}$' },
      key: { type: 'string', minLength: 8 },
      keyHash: { type: 'string', pattern: '^[0-9a-f]{64}$' },
      ...KEY_POLICY_PROPERTIES,
    },
    oneOf: [{ required: ['key'] }, { required: ['keyHash'] }],
  },
} as const;

/** @throws ConfigError on a repeated id or key. */
export function recordsOfConfigKeys(keys: readonly ConfigKey[]): ApiKeyRecord[] {
  const ids = new Set<string>();
  const hashes = new Set<string>();
  return keys.map((entry) => {
    const keyHash = entry.keyHash ?? hashKey(entry.key!);
    if (ids.has(entry.id))
      throw new ConfigError(`invalid edge config: /keys repeats the id ${JSON.stringify(entry.id)}`);
    if (hashes.has(keyHash))
      throw new ConfigError(`invalid edge config: /keys repeats a key (id ${JSON.stringify(entry.id)})`);
    ids.add(entry.id);
    hashes.add(keyHash);
    const expiresAtMs = entry.expiresAt === undefined ? undefined : Date.parse(entry.expiresAt);
    if (expiresAtMs !== undefined && Number.isNaN(expiresAtMs))
      throw new ConfigError(
        `invalid edge config: /keys ${JSON.stringify(entry.id)} expiresAt is not an RFC 3339 time: ${JSON.stringify(entry.expiresAt)}`,
      );
    return {
      id: entry.id,
      name: entry.name,
      owner: entry.owner ?? '',
      keyHash,
      createdAtMs: 0,
      source: 'config',
      ...(entry.models === undefined ? {} : { models: entry.models }),
      ...(entry.limits === undefined ? {} : { limits: entry.limits }),
      ...(entry.budget === undefined ? {} : { budget: entry.budget }),
      ...(expiresAtMs === undefined ? {} : { expiresAtMs }),
    };
  });
}
