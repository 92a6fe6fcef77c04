/**
 * Client API key primitives: the presented key (`Authorization: Bearer <key>` — OpenAI SDKs, Codex
 * CLI — or a dialect's key header — `x-api-key` for the Anthropic SDK and Claude Code,
 * `x-goog-api-key` for Google's Gen AI SDK and Gemini CLI — or its query parameter, Gemini's
 * `?key=`) and the owner id of stored Responses. Where a path's clients send it is the dialect
 * registry's (http/route-table.ts `keySources`). The check itself is http/key-check.ts (plain keys
 * matched with @iop/core's `secretIn`).
 */
import { createHash } from 'node:crypto';
import type { Request } from 'express';
import type { KeySources } from './route-table.js';

/** The sources of a request with no registry at hand: `x-api-key`, then `Authorization: Bearer`. */
export const DEFAULT_KEY_SOURCES: KeySources = { headers: ['x-api-key'] };

/**
 * The key a request presents, if any: the first non-empty header of `sources.headers`, then
 * `Authorization: Bearer`, then the query parameter `sources.queryParam` (an empty value counts as
 * none: Gemini CLI sends an empty `x-goog-api-key` when it has no key).
 */
export function presentedKey(req: Request, sources: KeySources = DEFAULT_KEY_SOURCES): string | undefined {
  for (const name of sources.headers) {
    const value = req.headers[name];
    if (typeof value === 'string' && value.length > 0) return value;
  }
  const authorization = req.headers.authorization;
  if (authorization !== undefined) {
    const match = /^Bearer\s+(.+)$/i.exec(authorization);
    if (match !== null) return match[1]!.trim();
  }
  if (sources.queryParam === undefined) return undefined;
  const url = req.url ?? '';
  const q = url.indexOf('?');
  if (q < 0) return undefined;
  const value = new URLSearchParams(url.slice(q + 1)).get(sources.queryParam);
  return value === null || value.length === 0 ? undefined : value;
}

/** How a client on these sources is told to send its key (the 401's message). */
export function keyHint(sources: KeySources): string {
  const ways = [
    '`Authorization: Bearer <key>`',
    ...(sources.named ?? sources.headers).map((name) => `\`${name}: <key>\``),
  ];
  if (sources.queryParam !== undefined) ways.push(`\`?${sources.queryParam}=<key>\``);
  return ways.length === 1 ? ways[0]! : `${ways.slice(0, -1).join(', ')} or ${ways.at(-1)!}`;
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
