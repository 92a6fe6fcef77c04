/**
 * Client key check for `/v1` with keys from every source (keys/key-directory.ts): the config's
 * plain `apiKeys`, the config's `keys` with policy, and keys managed through the admin API. A
 * missing, unknown, revoked or expired key is a 401 in the client's dialect. A request that
 * passes gets `res.locals.identity` (limits, ledger) and `res.locals.owner` (stored Responses:
 * SHA-256 of a plain key, `key:<id>` for a key with policy, `''` on an open edge). The edge is
 * open — every request passes — only when no source holds a key.
 */
import type { NextFunction, Request, Response } from 'express';
import { IopError, secretIn } from '@iop/core';
import type { EdgeContext } from '../edge-context.js';
import { hashKey, responsesOwnerOf, unusableReason } from '../keys/api-key.js';
import type { KeyIdentity } from '../keys/key-directory.js';
import { DEFAULT_KEY_SOURCES, keyHint, OPEN_EDGE_OWNER, ownerOfKey, presentedKey } from './auth.js';
import type { KeySources } from './route-table.js';
import type { RequestLocals } from './request-context.js';

/** The path of a URL as sent (the key check runs under a mount point, where `req.path` is trimmed). */
function pathOf(url: string): string {
  const q = url.indexOf('?');
  return q < 0 ? url : url.slice(0, q);
}

export const OPEN_IDENTITY: KeyIdentity = { keyId: 'open', owner: OPEN_EDGE_OWNER };

/** Identities of the configured plain keys, by key: built once per key, not hashed again on every request. */
const plainIdentities = new Map<string, KeyIdentity>();
const MAX_PLAIN_IDENTITIES = 1024;

/** The identity of a configured plain key (only called once `given` matched one). */
function plainIdentity(key: string): KeyIdentity {
  let identity = plainIdentities.get(key);
  if (identity === undefined) {
    if (plainIdentities.size >= MAX_PLAIN_IDENTITIES) plainIdentities.clear();
    const owner = ownerOfKey(key);
    identity = { keyId: `legacy:${owner.slice(0, 12)}`, owner };
    plainIdentities.set(key, identity);
  }
  return identity;
}

/**
 * `sourcesFor(path)`: where a request on `path` may carry its key (the dialect registry's; `x-api-key` and Bearer
 * without one).
 */
export function keyCheck(edge: EdgeContext, sourcesFor?: (path: string) => KeySources) {
  return async function keyCheckMiddleware(req: Request, res: Response, next: NextFunction): Promise<void> {
    const context = res.locals as RequestLocals;
    const state = edge.state;
    try {
      const plain = edge.config.apiKeys;
      const sources = sourcesFor === undefined ? DEFAULT_KEY_SOURCES : sourcesFor(pathOf(req.originalUrl ?? req.url));
      const given = presentedKey(req, sources);
      if (given !== undefined && plain.length > 0 && secretIn(given, plain)) {
        const identity = plainIdentity(given);
        context.owner = identity.owner;
        context.identity = identity;
        return next();
      }
      const directory = state?.keys;
      const anyKeys =
        plain.length > 0 || (directory !== undefined && (directory.hasConfigKeys || (await directory.storeHasKeys())));
      if (!anyKeys) {
        context.owner = OPEN_EDGE_OWNER;
        context.identity = OPEN_IDENTITY;
        return next();
      }
      if (given === undefined) return next(new IopError('authentication', `missing API key: send ${keyHint(sources)}`));
      const record = await directory?.lookup(given);
      if (record === undefined || record.keyHash !== hashKey(given))
        return next(new IopError('authentication', 'invalid API key'));
      const unusable = unusableReason(record, Date.now());
      if (unusable !== undefined) return next(new IopError('authentication', unusable));
      context.owner = responsesOwnerOf(record);
      context.identity = { record, keyId: record.id, owner: context.owner };
      next();
    } catch (error) {
      next(error);
    }
  };
}
