/**
 * Id minting. Ids are random (crypto), URL-safe, and carry the prefix each API uses:
 * `chatcmpl-` (OpenAI Chat), `resp_`/`msg_`/`fc_`/`rs_` (OpenAI Responses), `msg_`/`toolu_` (Anthropic),
 * `call_` (tool calls), `req_` (iop request ids), `run_` (tunnel runs).
 *
 * Random bytes are drawn 4 KiB at a time from the CSPRNG and handed out from that pool, so minting
 * an id on the hot path costs no system call.
 */
import { randomFillSync } from 'node:crypto';

const ALPHABET = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
const POOL_BYTES = 4096;
const pool = Buffer.allocUnsafe(POOL_BYTES);
let offset = POOL_BYTES;

/**
 * A random id: `prefix` + `length` base62 characters (default 24: ~142 bits, modulo bias
 * negligible for ids). @throws RangeError when `length` is not in 1..256.
 */
export function newId(prefix: string, length = 24): string {
  if (length < 1 || length > 256) throw new RangeError(`id length must be 1..256, got ${length}`);
  if (offset + length > POOL_BYTES) {
    randomFillSync(pool);
    offset = 0;
  }
  let out = prefix;
  for (let i = 0; i < length; i++) out += ALPHABET[pool[offset + i]! % 62];
  offset += length;
  return out;
}
