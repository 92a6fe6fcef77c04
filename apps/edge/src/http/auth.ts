/**
 * Client API key check: `Authorization: Bearer <key>` (OpenAI SDKs, Codex CLI) or `x-api-key:
 * <key>` (Anthropic SDK, Claude Code). A missing or unknown key is a 401 in the client's dialect.
 */
import { timingSafeEqual } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import { IopError } from '@iop/core';

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

/**
 * Express middleware factory; with no keys configured every request passes. `keys` may be a
 * getter, read on every request, so a config reload takes effect at once.
 */
export function apiKeyAuth(keys: readonly string[] | (() => readonly string[])) {
  const current = typeof keys === 'function' ? keys : () => keys;
  return function apiKeyAuthMiddleware(req: Request, _res: Response, next: NextFunction): void {
    const keys = current();
    if (keys.length === 0) return next();
    const given = presentedKey(req);
    if (given === undefined) return next(new IopError('authentication', 'missing API key: send `Authorization: Bearer <key>` or `x-api-key: <key>`'));
    if (!keyMatches(given, keys)) return next(new IopError('authentication', 'invalid API key'));
    next();
  };
}
