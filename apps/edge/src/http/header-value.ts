/**
 * Header values built from input the edge does not control (client field names in
 * `x-iop-warnings`, agent ids, backend content types) are made valid before they reach
 * `res.setHeader`, which throws on anything outside RFC 9110 §5.5 `field-value` (Node refuses
 * control characters and code points above U+00FF) — a throw there was a 500.
 *
 * The value keeps visible ASCII and spaces as they are; every other character (control
 * characters, anything non-ASCII — Latin-1 too, since clients decode header bytes differently) is
 * percent-encoded as UTF-8 (RFC 3986 §2.1), and `%` itself becomes `%25`, so the original text is
 * recoverable with `decodeURIComponent`. The result is cut to `maxLength` characters (default
 * 4,096; Node's HTTP client refuses response headers over 16 KiB in total) at a character boundary,
 * ending in `...` when cut.
 */

/** The longest value `headerValue` returns by default, characters (= bytes: the result is ASCII). */
export const DEFAULT_HEADER_VALUE_MAX_LENGTH = 4096;

const NEEDS_ENCODING = /[^\x20-\x24\x26-\x7e]/u;
const NEEDS_ENCODING_GLOBAL = /[^\x20-\x24\x26-\x7e]/gu;

function encodeCharacter(character: string): string {
  // A lone surrogate cannot be encoded as UTF-8: it becomes U+FFFD.
  try {
    return encodeURIComponent(character);
  } catch {
    return '%EF%BF%BD';
  }
}

/** `text` as a valid, ASCII-only header value of at most `maxLength` characters (see the module comment). */
export function headerValue(text: string, maxLength = DEFAULT_HEADER_VALUE_MAX_LENGTH): string {
  let value = NEEDS_ENCODING.test(text) ? text.replace(NEEDS_ENCODING_GLOBAL, encodeCharacter) : text;
  value = value.replace(/^ +| +$/g, ''); // field-value has no leading or trailing whitespace
  if (value.length <= maxLength) return value;
  let end = maxLength - 3;
  // Never cut inside a %XX escape.
  const escape = value.lastIndexOf('%', end - 1);
  if (escape !== -1 && escape > end - 3) end = escape;
  return `${value.slice(0, end)}...`;
}
