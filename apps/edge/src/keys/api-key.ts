/**
 * A client API key and its policy: name, owner or team, allowed models, rate limits, budget,
 * concurrent streams, expiry. Keys are stored as their SHA-256 (hex), never in plain text: a key
 * is 32 random bytes (`generateKey`), so a fast hash is enough (no password stretching needed,
 * and a lookup per request stays cheap).
 */
import { createHash, randomBytes } from 'node:crypto';

export interface KeyLimits {
  /** Requests started per minute (fixed one-minute windows). */
  requestsPerMinute?: number;
  /** Tokens (input + output) per minute, counted on actual usage after each request. */
  tokensPerMinute?: number;
  /** Streams (requests in flight) at once. */
  maxConcurrentStreams?: number;
}

export type BudgetPeriod = 'day' | 'month' | 'total';

/** At least one of `maxTokens` and `maxCostUsd`; with both, whichever is reached first refuses. */
export interface KeyBudget {
  /** Tokens (input + output) allowed per period. */
  maxTokens?: number;
  /**
   * US dollars allowed per period: the cost of the key's requests at the price table (`pricing`, ledger/pricing.ts).
   */
  maxCostUsd?: number;
  /** `day` and `month` reset at 00:00 UTC of the day / the 1st of the month; `total` never. */
  period: BudgetPeriod;
}

/** What is kept per key besides its hash. */
export interface KeySettings {
  /**
   * Allowed model names as the client sends them (groups, aliases, served names); `*` and `?` globs. Empty or absent =
   * every model.
   */
  models?: string[];
  limits?: KeyLimits;
  budget?: KeyBudget;
}

export interface ApiKeyRecord extends KeySettings {
  /** Stable id (`key_…`); stored Responses belong to it, so a rotation keeps them. */
  id: string;
  name: string;
  /** Owner or team, free text (grouping in the usage ledger). */
  owner: string;
  /** SHA-256 of the key, 64 hex chars. */
  keyHash: string;
  createdAtMs: number;
  expiresAtMs?: number;
  revokedAtMs?: number;
  /** `config` (the config file's `keys`) or `admin` (the admin API, in the SQL store). */
  source: 'config' | 'admin';
}

/** SHA-256 hex of a key's UTF-8 bytes. */
export function hashKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/** A new key: `sk-iop-` and 32 random bytes, base64url (43 chars). */
export function generateKey(): string {
  return `sk-iop-${randomBytes(32).toString('base64url')}`;
}

/** The owner id of stored Responses for a managed key: its id, so they survive a rotation. */
export function responsesOwnerOf(record: ApiKeyRecord): string {
  return `key:${record.id}`;
}

const globCache = new Map<string, RegExp>();

function globToRegExp(glob: string): RegExp {
  let regexp = globCache.get(glob);
  if (regexp === undefined) {
    const source = glob
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '.*')
      .replace(/\?/g, '.');
    regexp = new RegExp(`^${source}$`);
    if (globCache.size < 1024) globCache.set(glob, regexp);
  }
  return regexp;
}

/**
 * Whether the key may use a model: any allowed entry matches one of `names` (what the client sent
 * plus what it resolves to — its group name — so a group's aliases follow the group).
 */
export function modelAllowed(settings: KeySettings, names: readonly string[]): boolean {
  const allowed = settings.models;
  if (allowed === undefined || allowed.length === 0) return true;
  return allowed.some((pattern) => names.some((name) => globToRegExp(pattern).test(name)));
}

/** Why a key cannot be used now, or undefined when it can. */
export function unusableReason(record: ApiKeyRecord, nowMs: number): string | undefined {
  if (record.revokedAtMs !== undefined) return 'this API key has been revoked';
  if (record.expiresAtMs !== undefined && record.expiresAtMs <= nowMs)
    return `this API key expired at ${new Date(record.expiresAtMs).toISOString()}`;
  return undefined;
}

/** The start of the budget period holding `nowMs` (UTC), ms; 0 for `total`. */
export function budgetPeriodStart(period: BudgetPeriod, nowMs: number): number {
  if (period === 'total') return 0;
  const date = new Date(nowMs);
  return period === 'day'
    ? Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate())
    : Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1);
}

/** The end of that period, ms (Infinity for `total`). */
export function budgetPeriodEnd(period: BudgetPeriod, nowMs: number): number {
  if (period === 'total') return Number.POSITIVE_INFINITY;
  const date = new Date(nowMs);
  return period === 'day'
    ? Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate() + 1)
    : Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1);
}
