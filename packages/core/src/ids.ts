/**
 * Id minting. Ids are random (crypto), URL-safe, and carry the prefix each API uses:
 * `chatcmpl-` (OpenAI Chat), `resp_`/`msg_`/`fc_`/`rs_` (OpenAI Responses), `msg_`/`toolu_` (Anthropic),
 * `call_` (tool calls), `req_` (iop request ids).
 */
import { randomBytes } from 'node:crypto';

const ALPHABET = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

/** A random id: `prefix` + `length` base62 characters (default 24, ~143 bits). */
export function newId(prefix: string, length = 24): string {
  const bytes = randomBytes(length);
  let out = prefix;
  for (let i = 0; i < length; i++) out += ALPHABET[bytes[i]! % 62];
  return out;
}
