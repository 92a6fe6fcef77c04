/**
 * The one comparison of secrets (API keys, admin keys, join tokens, resume tokens): both sides are
 * reduced to their SHA-256 digests and compared with `crypto.timingSafeEqual`, so the time taken
 * tells nothing of where they differ, nor of the expected secret's length.
 */
import { hash, timingSafeEqual } from 'node:crypto';

/** SHA-256 in one call (`crypto.hash`, Node ≥ 20.12: no Hash object per digest). */
function digest(value: string | Uint8Array): Buffer {
  return hash('sha256', value, 'buffer');
}

/** Whether `given` equals `expected`, in constant time. Strings are compared as their UTF-8 bytes. */
export function secretEquals(given: string | Uint8Array, expected: string | Uint8Array): boolean {
  return timingSafeEqual(digest(given), digest(expected));
}

/**
 * Digests of accepted secrets given as strings: configured keys and join tokens are few and are
 * checked on every request, so each is hashed once (they are in memory anyway, in the config).
 */
const acceptedDigests = new Map<string, Buffer>();
const MAX_ACCEPTED_DIGESTS = 1024;

function acceptedDigest(candidate: string | Uint8Array): Buffer {
  if (typeof candidate !== 'string') return digest(candidate);
  let known = acceptedDigests.get(candidate);
  if (known === undefined) {
    if (acceptedDigests.size >= MAX_ACCEPTED_DIGESTS) acceptedDigests.clear();
    known = digest(candidate);
    acceptedDigests.set(candidate, known);
  }
  return known;
}

/** Whether `given` equals one of `accepted`; every candidate is compared (no early exit). */
export function secretIn(given: string | Uint8Array, accepted: readonly (string | Uint8Array)[]): boolean {
  const presented = digest(given);
  let found = false;
  for (const candidate of accepted) found = timingSafeEqual(acceptedDigest(candidate), presented) || found;
  return found;
}
