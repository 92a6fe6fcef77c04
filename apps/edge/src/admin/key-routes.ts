/**
 * Key management on the admin API (behind admin keys), for keys kept in `storage.sql`:
 * - `POST /admin/keys` `{name, owner?, models?, limits?, budget?, expiresAt?}` → 201 with the key
 *   record and `key`, the secret, shown this once (only its SHA-256 is stored); `budget` is
 *   `{period: day|month|total, maxTokens?, maxCostUsd?}` (at least one of the two: a token budget,
 *   a money budget in US dollars at the price table, or both);
 * - `GET /admin/keys` → `{object:'list', data}`: managed and config keys, never a secret or hash;
 * - `GET /admin/keys/{id}`; `PATCH /admin/keys/{id}` (the same fields; `null` clears one);
 * - `POST /admin/keys/{id}/revoke` → the key stops working on every edge within
 *   `storage.keyCacheTtlMs` (at once on edges sharing Redis);
 * - `POST /admin/keys/{id}/rotate` → a new secret, shown once; the old one stops like a revocation.
 *   The key keeps its id, policy and budget (what it has spent counts on: budgets follow the id);
 *   an optional body of PATCH's fields (e.g. `{budget: {maxCostUsd, period}}`) changes them with it.
 * Config keys (`keys` in the config file) are listed but changed only in the file (409 here).
 */
import express, { type Express, type Request, type Response } from 'express';
import Ajv, { type ValidateFunction } from 'ajv';
import { IopError } from '@iop/core';
import type { EdgeContext } from '../edge-context.js';
import type { ApiKeyRecord } from '../keys/api-key.js';
import { KEY_POLICY_PROPERTIES } from '../keys/config-keys.js';
import type { KeyInput } from '../keys/key-store.js';
import type { SharedState } from '../shared-state.js';

const nullable = (schema: object) => ({ anyOf: [schema, { type: 'null' }] });
const ajv = new Ajv({ allErrors: true });
const validateCreate: ValidateFunction = ajv.compile({
  type: 'object',
  additionalProperties: false,
  required: ['name'],
  properties: KEY_POLICY_PROPERTIES,
});
const validatePatch: ValidateFunction = ajv.compile({
  type: 'object',
  additionalProperties: false,
  properties: Object.fromEntries(
    Object.entries(KEY_POLICY_PROPERTIES).map(([name, schema]) => [name, name === 'name' ? schema : nullable(schema)]),
  ),
});

/** The public view of a key: never its secret or hash. */
export function keyView(record: ApiKeyRecord): Record<string, unknown> {
  return {
    object: 'api_key',
    id: record.id,
    name: record.name,
    owner: record.owner,
    source: record.source,
    models: record.models ?? null,
    limits: record.limits ?? null,
    budget: record.budget ?? null,
    created_at: record.createdAtMs === 0 ? null : new Date(record.createdAtMs).toISOString(),
    expires_at: record.expiresAtMs === undefined ? null : new Date(record.expiresAtMs).toISOString(),
    revoked_at: record.revokedAtMs === undefined ? null : new Date(record.revokedAtMs).toISOString(),
  };
}

function parseBody(req: Request, validate: ValidateFunction): KeyInput {
  if (!validate(req.body)) {
    const problems = (validate.errors ?? []).map(
      (error) => `${error.instancePath || '/'} ${error.message ?? 'is invalid'}`,
    );
    throw new IopError('invalid_request', `invalid key: ${problems.join('; ')}`);
  }
  const body = req.body as Record<string, unknown>;
  const input: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(body))
    if (name !== 'expiresAt') input[name] = value === null ? undefined : value;
  if (typeof body.expiresAt === 'string') {
    const expiresAtMs = Date.parse(body.expiresAt);
    if (Number.isNaN(expiresAtMs))
      throw new IopError('invalid_request', `expiresAt is not an RFC 3339 time: ${JSON.stringify(body.expiresAt)}`, {
        param: 'expiresAt',
      });
    input.expiresAtMs = expiresAtMs;
  } else if (body.expiresAt === null) {
    input.expiresAtMs = undefined;
  }
  return input as unknown as KeyInput;
}

function requireState(edge: EdgeContext): SharedState {
  if (edge.state === undefined) throw new IopError('not_found', 'this edge has no key store');
  return edge.state;
}

async function managedKey(state: SharedState, edge: EdgeContext, id: string): Promise<ApiKeyRecord> {
  if (edge.config.keys.some((key) => key.id === id))
    throw new IopError('invalid_request', `key \`${id}\` comes from the config file: change it there`);
  const record = await state.keyStore.byId(id);
  if (record === undefined) throw new IopError('not_found', `no key \`${id}\``);
  return record;
}

export function mountKeyRoutes(app: Express, edge: EdgeContext): void {
  const json = express.json({ limit: '64kb' });
  app.post('/admin/keys', json, async (req: Request, res: Response) => {
    const state = requireState(edge);
    const { key, record } = await state.keyStore.create(parseBody(req, validateCreate));
    state.keys.invalidate(); // the edge may have cached "no keys yet"
    edge.logger.info({ keyId: record.id, name: record.name }, 'admin: key created');
    res.status(201).json({ ...keyView(record), key });
  });
  app.get('/admin/keys', async (_req: Request, res: Response) => {
    const state = requireState(edge);
    const fromConfig = edge.config.keys.map((key) =>
      keyView({
        ...key,
        owner: key.owner ?? '',
        keyHash: '',
        createdAtMs: 0,
        source: 'config',
        ...(key.expiresAt === undefined ? {} : { expiresAtMs: Date.parse(key.expiresAt) }),
      }),
    );
    res.json({ object: 'list', data: [...fromConfig, ...(await state.keyStore.list()).map(keyView)] });
  });
  app.get('/admin/keys/:id', async (req: Request, res: Response) => {
    res.json(keyView(await managedKey(requireState(edge), edge, String(req.params.id))));
  });
  app.patch('/admin/keys/:id', json, async (req: Request, res: Response) => {
    const state = requireState(edge);
    const current = await managedKey(state, edge, String(req.params.id));
    const updated = await state.keyStore.update(current.id, parseBody(req, validatePatch));
    await state.broadcastInvalidate(current.keyHash);
    edge.logger.info({ keyId: current.id }, 'admin: key updated');
    res.json(keyView(updated!));
  });
  app.post('/admin/keys/:id/revoke', async (req: Request, res: Response) => {
    const state = requireState(edge);
    const current = await managedKey(state, edge, String(req.params.id));
    await state.keyStore.revoke(current.id);
    await state.broadcastInvalidate(current.keyHash);
    edge.logger.info({ keyId: current.id }, 'admin: key revoked');
    res.json(keyView((await state.keyStore.byId(current.id))!));
  });
  app.post('/admin/keys/:id/rotate', json, async (req: Request, res: Response) => {
    const state = requireState(edge);
    const current = await managedKey(state, edge, String(req.params.id));
    const changes = req.body as Record<string, unknown> | undefined;
    if (current.revokedAtMs === undefined && changes !== undefined && Object.keys(changes).length > 0)
      await state.keyStore.update(current.id, parseBody(req, validatePatch));
    const rotated = await state.keyStore.rotate(current.id);
    if (rotated === undefined)
      throw new IopError('invalid_request', `key \`${current.id}\` is revoked: create a new one`);
    await state.broadcastInvalidate(rotated.previousHash);
    edge.logger.info({ keyId: current.id }, 'admin: key rotated');
    res.json({ ...keyView(rotated.record), key: rotated.key });
  });
}
