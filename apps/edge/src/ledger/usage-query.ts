/**
 * `GET /admin/usage`: sums of the ledger over a time range, grouped by any of `key`, `model` (the
 * model the client asked for), `served_model`, `agent`, `dialect`, `status` and `day` (UTC).
 */
import type { SqlDatabase, SqlValue } from '../storage/sql-database.js';

export const GROUPS = {
  key: 'key_id',
  model: 'requested_model',
  served_model: 'served_model',
  agent: 'agent_id',
  dialect: 'dialect',
  status: 'status',
  day: '(ts_ms / 86400000)',
} as const;

export type UsageGroup = keyof typeof GROUPS;

export interface UsageQuery {
  groupBy: UsageGroup[];
  /** Inclusive start, ms since the epoch. */
  fromMs?: number;
  /** Exclusive end, ms. */
  toMs?: number;
  /** Only this key's rows. */
  keyId?: string;
}

export interface UsageTotals {
  requests: number;
  input_tokens: number;
  output_tokens: number;
  cached_tokens: number;
  reasoning_tokens: number;
  errors: number;
  /** Requests whose tokens are the edge's estimate (streams that ended without the backend's usage). */
  estimated_requests: number;
  /** What the usage cost at the price table, USD (each row's cost as settled, ledger/pricing.ts). */
  cost_usd: number;
}

export type UsageGroupRow = Partial<Record<UsageGroup, string | number | null>> & UsageTotals;

const SUMS = `COUNT(*) AS requests, COALESCE(SUM(input_tokens), 0) AS input_tokens, COALESCE(SUM(output_tokens), 0) AS output_tokens,
  COALESCE(SUM(cached_tokens), 0) AS cached_tokens, COALESCE(SUM(reasoning_tokens), 0) AS reasoning_tokens,
  COALESCE(SUM(CASE WHEN status >= 400 THEN 1 ELSE 0 END), 0) AS errors, COALESCE(SUM(tokens_estimated), 0) AS estimated_requests,
  COALESCE(SUM(cost_usd), 0) AS cost_usd`;

/** Runs the query; numbers come back as numbers, `day` as `YYYY-MM-DD`. */
export async function queryUsage(db: SqlDatabase, query: UsageQuery): Promise<UsageGroupRow[]> {
  const where: string[] = [];
  const params: SqlValue[] = [];
  if (query.fromMs !== undefined) where.push(`ts_ms >= $${params.push(query.fromMs)}`);
  if (query.toMs !== undefined) where.push(`ts_ms < $${params.push(query.toMs)}`);
  if (query.keyId !== undefined) where.push(`key_id = $${params.push(query.keyId)}`);
  const groups = query.groupBy.map((group) => `${GROUPS[group]} AS ${group}`);
  const sql = `SELECT ${[...groups, SUMS].join(', ')} FROM usage_ledger${where.length > 0 ? ` WHERE ${where.join(' AND ')}` : ''}${
    groups.length > 0
      ? ` GROUP BY ${query.groupBy.map((group) => GROUPS[group]).join(', ')} ORDER BY ${query.groupBy.map((group) => GROUPS[group]).join(', ')}`
      : ''
  }`;
  const rows = await db.query<Record<string, string | number | null>>(sql, params);
  return rows.map((row) => {
    const out: Record<string, string | number | null> = {};
    for (const group of query.groupBy) {
      const value = row[group] ?? null;
      out[group] =
        group === 'day' && value !== null
          ? new Date(Number(value) * 86_400_000).toISOString().slice(0, 10)
          : group === 'status' && value !== null
            ? Number(value)
            : value;
    }
    for (const total of [
      'requests',
      'input_tokens',
      'output_tokens',
      'cached_tokens',
      'reasoning_tokens',
      'errors',
      'estimated_requests',
      'cost_usd',
    ] as const)
      out[total] = Number(row[total] ?? 0);
    return out as unknown as UsageGroupRow;
  });
}

/**
 * What a key has used since `sinceMs`: input + output tokens and cost, USD (seeds an in-memory budget after a restart).
 */
export async function usedSince(
  db: SqlDatabase,
  keyId: string,
  sinceMs: number,
): Promise<{ tokens: number; costUsd: number }> {
  const [row] = await db.query<{ tokens: string | number | null; cost: string | number | null }>(
    'SELECT COALESCE(SUM(input_tokens + output_tokens), 0) AS tokens, COALESCE(SUM(cost_usd), 0) AS cost FROM usage_ledger WHERE key_id = $1 AND ts_ms >= $2',
    [keyId, sinceMs],
  );
  return { tokens: Number(row?.tokens ?? 0), costUsd: Number(row?.cost ?? 0) };
}
