/**
 * The sim's tokenizer: deterministic and model-free. A token is a run of letters/digits/underscore
 * or one other non-space character, each with the whitespace before it; trailing whitespace is one
 * more token. Joining the tokens of a text gives the text back. Token ids are the FNV-1a hash of
 * the token text modulo a 151,936-entry vocabulary (Qwen's size), so they are stable across runs.
 */

const TOKEN_PATTERN = /\s*[\p{L}\p{N}_]+|\s*[^\s\p{L}\p{N}_]|\s+$/gu;
const VOCABULARY_SIZE = 151_936;

/** Splits `text` into tokens (strings whose concatenation is `text`). */
export function splitTokens(text: string): string[] {
  return text.match(TOKEN_PATTERN) ?? [];
}

/** Number of tokens in `text`. */
export function countTokens(text: string): number {
  if (text.length === 0) return 0;
  return splitTokens(text).length;
}

/** The id of one token. */
export function tokenId(token: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < token.length; i++) {
    hash ^= token.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % VOCABULARY_SIZE;
}

/** Text of one message `content`: a string, or the `text` of its text parts joined by "\n". */
export function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  let text = '';
  for (const part of content) {
    if (part !== null && typeof part === 'object' && typeof (part as { text?: unknown }).text === 'string') {
      text = text.length === 0 ? (part as { text: string }).text : `${text}\n${(part as { text: string }).text}`;
    }
  }
  return text;
}

/** Prompt tokens of a chat request: the sum of the token counts of every message's text. */
export function countMessageTokens(messages: readonly unknown[]): number {
  let count = 0;
  for (const message of messages) {
    if (message !== null && typeof message === 'object')
      count += textTokenIds(contentText((message as { content?: unknown }).content)).length;
  }
  return count;
}

/** Texts shorter than this are tokenized every time (cheap); longer ones are remembered. */
const MEMO_MIN_CHARS = 512;
/** Token ids remembered in all (about 8 bytes each): 4 Mi ids, ~32 MB. */
const MEMO_MAX_IDS = 4 * 1024 * 1024;
/** Text → its token ids, least recently used first. */
const memo = new Map<string, readonly number[]>();
let memoIds = 0;

/**
 * The token ids of one text. A multi-turn conversation sends the same long texts again and again (a
 * project's system prompt, the history), and the GPU model, `/tokenize` and the prompt count each
 * need their ids: a 20 000-token text takes ~30 ms to split, which on a shared host delayed every
 * stream the sim serves. So texts of 512 characters or more are remembered (LRU, 4 Mi ids in all);
 * the result is shared: do not mutate.
 */
export function textTokenIds(text: string): readonly number[] {
  if (text.length < MEMO_MIN_CHARS) return splitTokens(text).map(tokenId);
  const known = memo.get(text);
  if (known !== undefined) {
    memo.delete(text);
    memo.set(text, known);
    return known;
  }
  const ids = splitTokens(text).map(tokenId);
  memo.set(text, ids);
  memoIds += ids.length;
  for (const [oldest, oldIds] of memo) {
    if (memoIds <= MEMO_MAX_IDS || oldest === text) break;
    memo.delete(oldest);
    memoIds -= oldIds.length;
  }
  return ids;
}

/**
 * Token ids of a chat prompt, for the KV-cache model and `POST /tokenize` with `messages` (the
 * same ids, as vLLM's `/tokenize` applies the chat template the prompt is built with): the ids of
 * every message's text tokens, in order. Their count is the request's `prompt_tokens`.
 */
export function promptTokenIds(messages: readonly unknown[]): number[] {
  const ids: number[] = [];
  for (const message of messages) {
    if (message === null || typeof message !== 'object') continue;
    for (const id of textTokenIds(contentText((message as { content?: unknown }).content))) ids.push(id);
  }
  return ids;
}
