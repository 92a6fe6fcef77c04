/**
 * One Chat stream chunk read as bytes, without JSON parsing (docs/protocols.md "Chat stream"): the passthrough path
 * relays the backend's bytes as they are, so it looks for the few keys it acts on — `finish_reason`, `usage`, `error`,
 * `choices`, and generated output (`content`, `reasoning_content`, `reasoning`, `tool_calls`, a legacy completion's
 * `text`) — in one pass, and parses (`parseChunkData`, chunk.ts) only the rare chunks that need it. The parsed readers
 * of the same facts are chunk.ts's (`chunkGenerated`, `chunkToolCalls`, `finishReasonsOf`).
 */

const SPACE = 0x20;
const TAB = 0x09;
const COLON = 0x3a;
const QUOTE = 0x22;
const OPEN = 0x7b;
const CLOSE = 0x7d;
const LOWER_N = 0x6e;
const LOWER_F = 0x66;
const LOWER_U = 0x75;
const LOWER_E = 0x65;
const BACKSLASH = 0x5c;
const LOWER_C = 0x63;
const LOWER_R = 0x72;
const LOWER_T = 0x74;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const DONE = Buffer.from('[DONE]');
const USAGE_KEY = Buffer.from('"usage"');
const ERROR_KEY = Buffer.from('"error"');
const CHOICES_KEY = Buffer.from('"choices"');
const FINISH_KEY = Buffer.from('"finish_reason"');
const CONTENT_KEY = Buffer.from('"content"');
const REASONING_KEY = Buffer.from('"reasoning"');
const REASONING_CONTENT_KEY = Buffer.from('"reasoning_content"');
const TOOL_CALLS_KEY = Buffer.from('"tool_calls"');
/** Legacy completions put the generated text in `choices[].text`. */
const TEXT_KEY = Buffer.from('"text"');
const GENERATED_STRING_KEYS = [CONTENT_KEY, REASONING_CONTENT_KEY, REASONING_KEY, TEXT_KEY];
/** The finish reason labels the passthrough rewrites, as they appear in a chunk (quotes included). */
export const TOOL_CALLS_LABEL = Buffer.from('"tool_calls"');
export const STOP_LABEL = Buffer.from('"stop"');

/** `data[from..to)` with the spaces around it trimmed, as [from, to). */
export function trimSpaces(data: Buffer, from: number, to: number): [number, number] {
  while (from < to && data[from] === SPACE) from++;
  while (to > from && data[to - 1] === SPACE) to--;
  return [from, to];
}

/** Whether the (trimmed) data `data[from..to)` is `[DONE]`. */
export function isDoneBytes(data: Buffer, from: number, to: number): boolean {
  return to - from === DONE.length && startsWith(data, from, to, DONE);
}

/** Whether the (trimmed) data `data[from..to)` may be a JSON object: first byte `{`, last byte `}`. */
export function isObjectBytes(data: Buffer, from: number, to: number): boolean {
  return to > from && data[from] === OPEN && data[to - 1] === CLOSE;
}

/** Whether `data[start..end)` begins with `prefix` (a byte loop: cheaper than a native compare for a few bytes). */
export function startsWith(data: Buffer, start: number, end: number, prefix: Buffer): boolean {
  if (end - start < prefix.length) return false;
  for (let i = 0; i < prefix.length; i++) if (data[start + i] !== prefix[i]) return false;
  return true;
}

/** Whether `data[at..]` holds `key` (bounds-checked by the caller's `to`). */
export function matchesAt(data: Buffer, at: number, to: number, key: Buffer): boolean {
  if (at + key.length > to) return false;
  for (let i = 1; i < key.length; i++) if (data[at + i] !== key[i]) return false;
  return true;
}

/**
 * Where a value starts after a key ending at `i` (whitespace, colon, whitespace); -1 when no colon follows (not a key).
 */
function valueStart(data: Buffer, i: number, to: number): number {
  while (i < to && (data[i] === SPACE || data[i] === TAB)) i++;
  if (i >= to || data[i] !== COLON) return -1;
  i++;
  while (i < to && (data[i] === SPACE || data[i] === TAB)) i++;
  return i < to ? i : -1;
}

/**
 * Whether the key at `i` is one of generated output with a value that holds some: a non-empty string, or (`tool_calls`)
 * an array.
 */
function generatedValue(data: Buffer, i: number, to: number): boolean {
  for (const key of GENERATED_STRING_KEYS) {
    if (!matchesAt(data, i, to, key)) continue;
    const value = valueStart(data, i + key.length, to);
    return value !== -1 && data[value] === QUOTE && value + 1 < to && data[value + 1] !== QUOTE;
  }
  if (!matchesAt(data, i, to, TOOL_CALLS_KEY)) return false;
  const value = valueStart(data, i + TOOL_CALLS_KEY.length, to);
  return value !== -1 && data[value] === OPEN_BRACKET && value + 1 < to && data[value + 1] !== CLOSE_BRACKET;
}

/**
 * One pass over a chunk's bytes for the first byte of the values of `"finish_reason"`, `"usage"` and `"error"` (-1 when
 * absent), and whether it carries generated output: a non-empty `content`, `reasoning_content` or `reasoning` string,
 * or a `tool_calls` array. A JSON string cannot hold an unescaped `"`, so a match followed by a colon is a key. A plain
 * loop: for lines of a few hundred bytes it is several times faster than `Buffer.indexOf` with a Buffer needle, whose
 * native call costs more than the scan.
 */
export class ChunkKeys {
  finish = -1;
  usage = -1;
  error = -1;
  choices = -1;
  generated = false;
  /** A non-empty `tool_calls` array. */
  toolCalls = false;

  scan(data: Buffer, from: number, to: number): void {
    this.finish = this.usage = this.error = this.choices = -1;
    this.generated = this.toolCalls = false;
    for (let i = from; i < to; i++) {
      if (data[i] !== QUOTE) continue;
      const first = i + 1 < to ? data[i + 1] : 0;
      if (first === LOWER_F && this.finish === -1 && matchesAt(data, i, to, FINISH_KEY))
        this.finish = valueStart(data, i + FINISH_KEY.length, to);
      else if (first === LOWER_U && this.usage === -1 && matchesAt(data, i, to, USAGE_KEY))
        this.usage = valueStart(data, i + USAGE_KEY.length, to);
      else if (first === LOWER_E && this.error === -1 && matchesAt(data, i, to, ERROR_KEY))
        this.error = valueStart(data, i + ERROR_KEY.length, to);
      else if (first === LOWER_C && this.choices === -1 && matchesAt(data, i, to, CHOICES_KEY))
        this.choices = valueStart(data, i + CHOICES_KEY.length, to);
      else if (first === LOWER_T && !this.toolCalls && matchesAt(data, i, to, TOOL_CALLS_KEY)) {
        // Looked for even after other output in the chunk: the finish reason depends on it.
        this.toolCalls = generatedValue(data, i, to);
        if (this.toolCalls) this.generated = true;
      } else if (!this.generated && (first === LOWER_C || first === LOWER_R || first === LOWER_T))
        this.generated = generatedValue(data, i, to);
      // Skip the rest of this string (keys and values alike) up to its closing quote.
      for (i++; i < to && data[i] !== QUOTE; i++) if (data[i] === BACKSLASH) i++;
    }
  }

  /** Whether the chunk has a string `finish_reason` (a finished choice). */
  finished(data: Buffer): boolean {
    return this.finish !== -1 && data[this.finish] === QUOTE;
  }

  /** Whether the (string) `finish_reason` is `label` (`"stop"` or `"tool_calls"`, quotes included). */
  finishIs(data: Buffer, to: number, label: Buffer): boolean {
    return matchesAt(data, this.finish, to, label);
  }

  /** The string `finish_reason`, up to its closing quote (finish reasons hold no escapes); undefined when none. */
  finishReason(data: Buffer, to: number): string | undefined {
    if (!this.finished(data)) return undefined;
    const end = data.indexOf(QUOTE, this.finish + 1);
    return end > this.finish && end <= to ? data.toString('latin1', this.finish + 1, end) : undefined;
  }

  /** Whether `usage` is present and not `null`. */
  hasUsage(data: Buffer): boolean {
    return this.usage !== -1 && data[this.usage] !== LOWER_N;
  }

  /** Whether `error` is present and not `null`. */
  hasError(data: Buffer): boolean {
    return this.error !== -1 && data[this.error] !== LOWER_N;
  }

  /** Whether `choices` is the empty array `[]` (the conformant usage chunk's). */
  choicesEmpty(data: Buffer): boolean {
    return this.choices !== -1 && data[this.choices] === OPEN_BRACKET && data[this.choices + 1] === CLOSE_BRACKET;
  }
}
