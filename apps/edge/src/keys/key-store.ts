/**
 * Keys managed through the admin API, in the SQL database (`api_keys`, storage/migrations.ts):
 * SQLite for one edge, PostgreSQL shared by many. Only the SHA-256 of a key is stored; `create`
 * and `rotate` return the key itself once.
 */
import { newId } from '@iop/core';
import type { SqlDatabase } from '../storage/sql-database.js';
import { generateKey, hashKey, type ApiKeyRecord, type KeySettings } from './api-key.js';

export interface KeyInput extends KeySettings {
  name: string;
  owner?: string;
  /** Expiry, ms since the epoch; absent = never. */
  expiresAtMs?: number;
}

interface Row {
  id: string;
  key_hash: string;
  name: string;
  owner: string;
  settings: string;
  created_at_ms: string | number;
  expires_at_ms: string | number | null;
  revoked_at_ms: string | number | null;
}

function fromRow(row: Row): ApiKeyRecord {
  const settings = JSON.parse(row.settings) as KeySettings;
  return {
    ...settings,
    id: row.id,
    keyHash: row.key_hash,
    name: row.name,
    owner: row.owner,
    createdAtMs: Number(row.created_at_ms),
    ...(row.expires_at_ms === null ? {} : { expiresAtMs: Number(row.expires_at_ms) }),
    ...(row.revoked_at_ms === null ? {} : { revokedAtMs: Number(row.revoked_at_ms) }),
    source: 'admin',
  };
}

const settingsOf = (input: KeySettings): string =>
  JSON.stringify({ models: input.models, limits: input.limits, budget: input.budget });
const COLUMNS = 'id, key_hash, name, owner, settings, created_at_ms, expires_at_ms, revoked_at_ms';

export class KeyStore {
  constructor(private readonly db: SqlDatabase) {}

  /** Creates a key; the returned `key` is shown once and never stored. */
  async create(input: KeyInput, now = Date.now()): Promise<{ key: string; record: ApiKeyRecord }> {
    const key = generateKey();
    const id = newId('key_');
    await this.db.execute(
      `INSERT INTO api_keys (id, key_hash, name, owner, settings, created_at_ms, updated_at_ms, expires_at_ms) VALUES ($1, $2, $3, $4, $5, $6, $6, $7)`,
      [id, hashKey(key), input.name, input.owner ?? '', settingsOf(input), now, input.expiresAtMs ?? null],
    );
    return { key, record: (await this.byId(id))! };
  }

  async list(): Promise<ApiKeyRecord[]> {
    return (await this.db.query<Row>(`SELECT ${COLUMNS} FROM api_keys ORDER BY created_at_ms, id`)).map(fromRow);
  }

  async byId(id: string): Promise<ApiKeyRecord | undefined> {
    const [row] = await this.db.query<Row>(`SELECT ${COLUMNS} FROM api_keys WHERE id = $1`, [id]);
    return row === undefined ? undefined : fromRow(row);
  }

  /** The key whose hash this is (revoked and expired ones included: the caller decides). */
  async byHash(keyHash: string): Promise<ApiKeyRecord | undefined> {
    const [row] = await this.db.query<Row>(`SELECT ${COLUMNS} FROM api_keys WHERE key_hash = $1`, [keyHash]);
    return row === undefined ? undefined : fromRow(row);
  }

  /** Whether any key that is not revoked exists (an edge with none and no configured keys is open). */
  async hasActiveKeys(): Promise<boolean> {
    return (await this.db.query('SELECT 1 AS one FROM api_keys WHERE revoked_at_ms IS NULL LIMIT 1')).length > 0;
  }

  /** Replaces the fields given; resolves undefined for an unknown id. */
  async update(id: string, patch: Partial<KeyInput>, now = Date.now()): Promise<ApiKeyRecord | undefined> {
    const current = await this.byId(id);
    if (current === undefined) return undefined;
    const next = { ...current, ...patch };
    await this.db.execute(
      'UPDATE api_keys SET name = $2, owner = $3, settings = $4, expires_at_ms = $5, updated_at_ms = $6 WHERE id = $1',
      [id, next.name, next.owner, settingsOf(next), next.expiresAtMs ?? null, now],
    );
    return this.byId(id);
  }

  /** Marks the key revoked (kept for the ledger's names); false for an unknown id. */
  async revoke(id: string, now = Date.now()): Promise<boolean> {
    return (
      (await this.db.execute(
        'UPDATE api_keys SET revoked_at_ms = COALESCE(revoked_at_ms, $2), updated_at_ms = $2 WHERE id = $1',
        [id, now],
      )) > 0
    );
  }

  /**
   * A new secret for the same key id (its settings, ledger rows and stored Responses stay); the old secret stops
   * working.
   */
  async rotate(
    id: string,
    now = Date.now(),
  ): Promise<{ key: string; record: ApiKeyRecord; previousHash: string } | undefined> {
    const current = await this.byId(id);
    if (current === undefined || current.revokedAtMs !== undefined) return undefined;
    const key = generateKey();
    await this.db.execute('UPDATE api_keys SET key_hash = $2, updated_at_ms = $3 WHERE id = $1', [
      id,
      hashKey(key),
      now,
    ]);
    return { key, record: (await this.byId(id))!, previousHash: current.keyHash };
  }
}
