/**
 * Client API key check: `Authorization: Bearer <key>` (OpenAI SDKs, Codex CLI) or `x-api-key:
 * <key>` (Anthropic SDK, Claude Code). A missing or unknown key is a 401 in the client's dialect.
 * A request that passes gets its owner (`ownerOfKey`) in `res.locals.owner` for the stores that
 * scope records to the client key (stored Responses).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import { IopError } from '@iop/core';
import type { RequestLocals } from './request-context.js';

function presentedKey(req: Request): string | undefined {
  const apiKey = req.headers['x-api-key'];
  if (typeof apiKey === 'string' && apiKey.length > 0) return apiKey;
  const authorization = req.headers.authorization;
  if (authorization === undefined) return undefined;
  const match = /^Bearer\s+(.+)$/i.exec(authorization);
  return match?.[1]?.trim();
}

export function keyMatches(given: string, keys: readonly string[]): boolean {
  const presented = Buffer.from(given);
  let found = false;
  for (const key of keys) {
    const expected = Buffer.from(key);
    if (expected.length === presented.length && timingSafeEqual(expected, presented)) found = true;
  }
  return found;
}

/** The owner of records stored with no client keys configured (an open edge). */
export const OPEN_EDGE_OWNER = '';

/**
 * The owner id of records stored with a client key: SHA-256 of the key's UTF-8 bytes, 64 lowercase
 * hex chars. The key itself is never stored. The owner follows the key, not its position in the key
 * list: a reload that keeps a key keeps its records; a removed key's records stay unreadable (until
 * retention drops them) and a new key starts with none.
 */
export function ownerOfKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/**
 * Express middleware factory; with no keys configured every request passes, owned by
 * `OPEN_EDGE_OWNER`. `keys` may be a getter, read on every request, so a config reload takes
 * effect at once. Sets `res.locals.owner` (see `RequestLocals.owner`).
 */
export function apiKeyAuth(keys: readonly string[] | (() => readonly string[])) {
  const current = typeof keys === 'function' ? keys : () => keys;
  return function apiKeyAuthMiddleware(req: Request, res: Response, next: NextFunction): void {
    const keys = current();
    const context = res.locals as RequestLocals;
    if (keys.length === 0) {
      context.owner = OPEN_EDGE_OWNER;
      return next();
    }
    const given = presentedKey(req);
    if (given === undefined) return next(new IopError('authentication', 'missing API key: send `Authorization: Bearer <key>` or `x-api-key: <key>`'));
    if (!keyMatches(given, keys)) return next(new IopError('authentication', 'invalid API key'));
    context.owner = ownerOfKey(given);
    next();
  };
}
