/**
 * Client API key primitives: the presented key (`Authorization: Bearer <key>` — OpenAI SDKs, Codex
 * CLI — or `x-api-key: <key>` — Anthropic SDK, Claude Code) and the owner id of stored Responses.
 * The check itself is http/key-check.ts (plain keys matched with @iop/core's `secretIn`).
 */
import { createHash } from 'node:crypto';
import type { Request } from 'express';

/** The key a request presents (`x-api-key` first, then `Authorization: Bearer`), if any. */
export function presentedKey(req: Request): string | undefined {
  const apiKey = req.headers['x-api-key'];
  if (typeof apiKey === 'string' && apiKey.length > 0) return apiKey;
  const authorization = req.headers.authorization;
  if (authorization === undefined) return undefined;
  const match = /^Bearer\s+(.+)$/i.exec(authorization);
  return match?.[1]?.trim();
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
