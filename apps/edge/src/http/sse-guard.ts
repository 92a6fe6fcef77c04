/**
 * Makes a relayed Chat Completions SSE stream (passthrough path) spec-conformant whatever the backend's framing
 * (docs/protocols.md "Chat stream", "Chat errors"; the SSE event-stream format of the WHATWG HTML standard, §9.2.6),
 * while ordinary chunks pass as the backend's own bytes:
 *
 * - Events are split at blank lines (LF or CRLF line ends). An event whose data spans several `data:` lines (valid SSE:
 *   the lines are joined with `\n`) is parsed and re-sent on one line.
 * - A one-line `data:` event must carry `[DONE]` or a JSON object (first byte `{`, last byte `}`); anything else is a
 *   malformed chunk: the stream ends there as a failure.
 * - Each one-line event is scanned once, byte by byte, for the keys `"usage"`, `"error"` and `"finish_reason"` (string
 *   contents are skipped); only a chunk whose `usage` or `error` value is not `null` is JSON-parsed and handed to
 *   `ChunkRules` (usage and error rules). A non-null `finish_reason` marks a choice finished; once every choice is
 *   (`choices`: 1, or a legacy completion's prompts × `n`), a stream cut after it is complete, and gets its usage chunk
 *   and `[DONE]` from `end()`.
 * - The finish reason follows what was relayed: the scan notes a non-empty `tool_calls` array, and a `finish_reason` of
 *   `"tool_calls"` with none relayed before (or `"stop"` after one) sends that one chunk through `ChunkRules` to be
 *   rewritten (`withDeliveredFinish`); every other chunk costs only the byte comparison of its label. Tool calls are
 *   tracked per stream, not per choice (`n` > 1 streams share one flag).
 * - Nothing after `[DONE]` is sent.
 * - Chunks of generated output (a non-empty `content`, `reasoning_content` or `reasoning`, or `tool_calls`; a legacy
 *   completion's `text`) are counted (`generatedChunks`): the output-token estimate of a stream that ends without its
 *   usage chunk.
 *
 * Built on bytes rather than on eventsource-parser (which iop's normalized path uses): this path must send the
 * backend's bytes unchanged and uncopied, and a string parser would decode and re-encode every chunk.
 *
 * Only complete events are passed on: a frame that ends mid-event holds that part until the next frame (backends write
 * an event per write, so this costs no latency in practice).
 */
import { IopError, SSE_DONE } from '@iop/core';
import { ChunkRules, withDeliveredFinish } from './chunk-rules.js';

const NEWLINE = 0x0a;
const CR = 0x0d;
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
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const DATA = Buffer.from('data:');
const EVENT = Buffer.from('event:');
const DONE = Buffer.from('[DONE]');
const DONE_EVENT = Buffer.from(SSE_DONE);
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
const LOWER_R = 0x72;
const LOWER_T = 0x74;
const GENERATED_STRING_KEYS = [CONTENT_KEY, REASONING_CONTENT_KEY, REASONING_KEY, TEXT_KEY];
const EMPTY = Buffer.alloc(0);
const TOOL_CALLS_LABEL = Buffer.from('"tool_calls"');
const STOP_LABEL = Buffer.from('"stop"');

export interface GuardResult {
  /** Bytes to send now: complete events, up to (not including) a failing one. */
  safe: Buffer;
  /** The stream must end here (malformed chunk or backend error chunk): send `safe`, then this as an in-band error. */
  failure: IopError | undefined;
}

function malformed(): IopError {
  return new IopError('upstream_error', 'upstream failure: the backend sent a malformed stream chunk');
}

/** Whether `data[start..end)` begins with `prefix` (a byte loop: cheaper than a native compare for a few bytes). */
function startsWith(data: Buffer, start: number, end: number, prefix: Buffer): boolean {
  if (end - start < prefix.length) return false;
  for (let i = 0; i < prefix.length; i++) if (data[start + i] !== prefix[i]) return false;
  return true;
}

/** Whether `data[at..]` holds `key` (bounds-checked by the caller's `to`). */
function matchesAt(data: Buffer, at: number, to: number, key: Buffer): boolean {
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

/** Finish reasons kept per stream (a choice each; `n` is rarely above a few). */
const MAX_FINISH_REASONS = 16;

/** The string `finish_reason` values of a parsed chunk's choices. */
export function finishReasonsOf(chunk: unknown): string[] {
  const choices = (chunk as { choices?: unknown } | null)?.choices;
  if (!Array.isArray(choices)) return [];
  const reasons: string[] = [];
  for (const choice of choices) {
    const reason = (choice as { finish_reason?: unknown } | null)?.finish_reason;
    if (typeof reason === 'string') reasons.push(reason);
  }
  return reasons;
}

/** Whether a parsed chunk carries generated output (as `generatedValue`, for multi-line events). */
function chunkGenerated(chunk: unknown): boolean {
  const choices = (chunk as { choices?: unknown } | null)?.choices;
  if (!Array.isArray(choices)) return false;
  for (const choice of choices) {
    if (typeof (choice as { text?: unknown } | null)?.text === 'string' && (choice as { text: string }).text !== '')
      return true;
    const delta = (choice as { delta?: Record<string, unknown> } | null)?.delta;
    if (typeof delta !== 'object' || delta === null) continue;
    for (const key of ['content', 'reasoning_content', 'reasoning'])
      if (typeof delta[key] === 'string' && delta[key] !== '') return true;
    if (Array.isArray(delta.tool_calls) && delta.tool_calls.length > 0) return true;
  }
  return false;
}

/** Whether a parsed chunk carries a non-empty `tool_calls` array in a choice's delta. */
function chunkToolCalls(chunk: unknown): boolean {
  const choices = (chunk as { choices?: unknown } | null)?.choices;
  if (!Array.isArray(choices)) return false;
  return choices.some((choice) => {
    const calls = (choice as { delta?: { tool_calls?: unknown } } | null)?.delta?.tool_calls;
    return Array.isArray(calls) && calls.length > 0;
  });
}

/**
 * One pass over a chunk's bytes for the first byte of the values of `"finish_reason"`, `"usage"` and `"error"` (-1 when
 * absent), and whether it carries generated output: a non-empty `content`, `reasoning_content` or `reasoning` string,
 * or a `tool_calls` array. A JSON string cannot hold an unescaped `"`, so a match followed by a colon is a key. A plain
 * loop: for lines of a few hundred bytes it is several times faster than `Buffer.indexOf` with a Buffer needle, whose
 * native call costs more than the scan.
 */
class ChunkKeys {
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
}

export class SseGuard {
  private partial: Buffer | undefined;
  private readonly rules: ChunkRules;
  /** `data: [DONE]` has passed: nothing more is sent. */
  sawDone = false;
  /**
   * Chunks with a non-null `finish_reason` that have passed (one per choice: vLLM, SGLang, llama.cpp send a choice per
   * chunk).
   */
  private finishes = 0;
  /** Finish reasons a complete answer has: its choices (legacy completions: prompts × `n`). */
  private readonly choices: number;
  /**
   * The `finish_reason` values that passed, one per finished choice, in order (at most `MAX_FINISH_REASONS`; the
   * request span's `gen_ai.response.finish_reasons`).
   */
  readonly finishReasons: string[] = [];
  /**
   * Chunks of generated output passed (non-empty content, reasoning or tool calls: one token each by default in vLLM,
   * SGLang, llama.cpp server).
   */
  generatedChunks = 0;
  /** A chunk with a non-empty `tool_calls` array has passed (the finish reason must then say `tool_calls`). */
  private sawToolCall = false;
  // The event being scanned: its data lines as [from, to) ranges of the current buffer (the first
  // in scalars: nearly every event has one data line; more are kept in `moreData`).
  private dataLines = 0;
  private firstFrom = 0;
  private firstTo = 0;
  private moreData: number[] | undefined;
  private errorEvent = false;
  private readonly keys = new ChunkKeys();

  constructor(options: { includeUsage: boolean; choices?: number | undefined }) {
    this.rules = new ChunkRules(options.includeUsage);
    this.choices = Math.max(1, options.choices ?? 1);
  }

  /** Every choice's finish reason has passed: the answer is whole (a cut after it is complete). */
  get sawFinish(): boolean {
    return this.finishes >= this.choices;
  }

  /** The last usage object the rules parsed (see `ChunkRules.parsedUsage`). */
  get parsedUsage(): Record<string, unknown> | undefined {
    return this.rules.parsedUsage;
  }

  push(chunk: Uint8Array): GuardResult {
    if (this.sawDone) return { safe: EMPTY, failure: undefined };
    const data =
      this.partial === undefined
        ? Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)
        : Buffer.concat([this.partial, chunk]);
    this.partial = undefined;
    return this.scan(data, false);
  }

  /**
   * The end of the backend's stream: a last event without its blank line is taken as complete;
   * a finished answer without `[DONE]` gets its usage chunk and `[DONE]`.
   * @returns the bytes to send, and whether the stream was complete (finished or `[DONE]`).
   */
  end(): { safe: Buffer; failure: IopError | undefined; complete: boolean } {
    let result: GuardResult = { safe: EMPTY, failure: undefined };
    if (!this.sawDone && this.partial !== undefined) {
      const rest = this.partial;
      this.partial = undefined;
      result = this.scan(rest, true);
    }
    if (result.failure !== undefined || this.sawDone) return { ...result, complete: this.sawDone };
    if (!this.sawFinish) return { ...result, complete: false };
    this.sawDone = true;
    const usage = this.rules.takeUsage();
    return {
      safe: Buffer.concat(usage === undefined ? [result.safe, DONE_EVENT] : [result.safe, usage, DONE_EVENT]),
      failure: undefined,
      complete: true,
    };
  }

  /** Scans whole events of `data`; `final`: the buffer is the stream's last bytes (an unterminated event counts). */
  private scan(data: Buffer, final: boolean): GuardResult {
    let parts: Buffer[] | undefined;
    let emitFrom = 0;
    let eventStart = 0;
    let start = 0;
    this.resetEvent();
    for (;;) {
      let end = data.indexOf(NEWLINE, start);
      const last = end === -1;
      if (last) {
        if (!final) break;
        end = data.length;
      }
      let lineEnd = end;
      if (lineEnd > start && data[lineEnd - 1] === CR) lineEnd--;
      const next = last ? data.length : end + 1;
      if (lineEnd === start || (last && start < end)) {
        if (last && lineEnd > start) this.addLine(data, start, lineEnd);
        // Blank line (or the stream's end): the event is complete.
        if (this.dataLines > 0) {
          const outcome = this.dispatch(data);
          if (outcome === 'fail' || outcome instanceof IopError) {
            const safe =
              parts === undefined
                ? data.subarray(emitFrom, eventStart)
                : Buffer.concat([...parts, data.subarray(emitFrom, eventStart)]);
            this.partial = undefined;
            return { safe, failure: outcome === 'fail' ? malformed() : outcome };
          }
          if (outcome !== 'original') {
            parts ??= [];
            parts.push(data.subarray(emitFrom, eventStart));
            if (outcome !== 'none') parts.push(...outcome);
            emitFrom = next;
          }
          if (this.sawDone) {
            const safe =
              parts === undefined
                ? data.subarray(emitFrom, next)
                : Buffer.concat([...parts, data.subarray(emitFrom, next)]);
            return { safe, failure: undefined };
          }
        }
        this.resetEvent();
        eventStart = next;
      } else {
        this.addLine(data, start, lineEnd);
      }
      start = next;
      if (last) break;
    }
    if (eventStart < data.length) this.partial = Buffer.from(data.subarray(eventStart));
    const tail = data.subarray(emitFrom, eventStart);
    return { safe: parts === undefined ? tail : Buffer.concat([...parts, tail]), failure: undefined };
  }

  private resetEvent(): void {
    this.dataLines = 0;
    this.moreData = undefined;
    this.errorEvent = false;
  }

  private addLine(data: Buffer, start: number, end: number): void {
    if (startsWith(data, start, end, DATA)) {
      let from = start + DATA.length;
      if (from < end && data[from] === SPACE) from++;
      if (this.dataLines === 0) {
        this.firstFrom = from;
        this.firstTo = end;
      } else {
        (this.moreData ??= []).push(from, end);
      }
      this.dataLines++;
    } else if (startsWith(data, start, end, EVENT)) {
      let from = start + EVENT.length;
      while (from < end && data[from] === SPACE) from++;
      this.errorEvent = data.toString('latin1', from, end).trim() === 'error';
    }
  }

  /**
   * Decides one complete event: `original` (send its bytes), `none` (drop it), replacement bytes,
   * `fail` (malformed) or the backend's error.
   */
  private dispatch(data: Buffer): 'original' | 'none' | 'fail' | IopError | Buffer[] {
    if (this.dataLines > 1) return this.reframe(data);
    let from = this.firstFrom;
    let to = this.firstTo;
    while (from < to && data[from] === SPACE) from++;
    while (to > from && data[to - 1] === SPACE) to--;
    if (from === to) return 'original';
    if (to - from === DONE.length && startsWith(data, from, to, DONE)) return this.done();
    if (data[from] !== OPEN || data[to - 1] !== CLOSE) return 'fail';
    const keys = this.keys;
    keys.scan(data, from, to);
    if (keys.generated) this.generatedChunks++;
    if (keys.toolCalls) this.sawToolCall = true;
    let misLabelled = false;
    if (keys.finish !== -1 && data[keys.finish] === QUOTE) {
      this.finishes++;
      misLabelled = matchesAt(data, keys.finish, to, this.sawToolCall ? STOP_LABEL : TOOL_CALLS_LABEL);
      // Once per finished choice: its value up to the closing quote (finish reasons hold no escapes);
      // a mislabelled one is recorded as delivered, once rewritten (`applyRules`).
      const end = misLabelled ? -1 : data.indexOf(QUOTE, keys.finish + 1);
      if (end > keys.finish && end <= to && this.finishReasons.length < MAX_FINISH_REASONS)
        this.finishReasons.push(data.toString('latin1', keys.finish + 1, end));
    }
    const hasUsage = keys.usage !== -1 && data[keys.usage] !== LOWER_N;
    const hasError = this.errorEvent || (keys.error !== -1 && data[keys.error] !== LOWER_N);
    if (!hasUsage && !hasError && !misLabelled) return 'original';
    if (
      !hasError &&
      !misLabelled &&
      keys.choices !== -1 &&
      data[keys.choices] === OPEN_BRACKET &&
      data[keys.choices + 1] === CLOSE_BRACKET
    ) {
      // Already the conformant usage chunk (vLLM, SGLang, llama.cpp server): held as it came, unparsed.
      this.rules.holdUsageEvent(data.subarray(from, to));
      return 'none';
    }
    return this.applyRules(data.toString('utf8', from, to), false, misLabelled);
  }

  /** A multi-line data event: the lines joined with `\n` are the payload (SSE), re-sent on one line. */
  private reframe(data: Buffer): 'original' | 'none' | 'fail' | IopError | Buffer[] {
    let payload = data.toString('utf8', this.firstFrom, this.firstTo);
    const more = this.moreData ?? [];
    for (let i = 0; i < more.length; i += 2) payload += `\n${data.toString('utf8', more[i], more[i + 1])}`;
    if (payload.trim() === '[DONE]') {
      this.done();
      return [DONE_EVENT];
    }
    return this.applyRules(payload, true, false);
  }

  /**
   * Parses one chunk and applies the rules. `multiLine`: a multi-line event (not yet scanned: its
   * output and tool calls are counted here); `misLabelled`: its finish reason disagrees with the
   * tool calls relayed (rewritten, so its bytes are re-sent).
   */
  private applyRules(
    payload: string,
    multiLine: boolean,
    misLabelled: boolean,
  ): 'original' | 'none' | 'fail' | IopError | Buffer[] {
    let chunk: unknown;
    try {
      chunk = JSON.parse(payload);
    } catch {
      return 'fail';
    }
    // A one-line chunk was counted by its scan (`dispatch`).
    let reframe = multiLine || misLabelled;
    if (multiLine) {
      if (chunkGenerated(chunk)) this.generatedChunks++;
      if (chunkToolCalls(chunk)) this.sawToolCall = true;
    }
    if (multiLine || misLabelled) {
      const saw = this.sawToolCall;
      if (
        typeof chunk === 'object' &&
        chunk !== null &&
        withDeliveredFinish(chunk as Record<string, unknown>, () => saw)
      )
        reframe = true;
    }
    const verdict = this.rules.apply(chunk, { errorEvent: this.errorEvent, reframe });
    if (verdict.kind === 'error') return verdict.error;
    if (verdict.finished) {
      this.finishes++;
      // A one-line chunk's finish reason was recorded by `dispatch`, unless rewritten here.
      if (multiLine || misLabelled)
        for (const reason of finishReasonsOf(chunk))
          if (this.finishReasons.length < MAX_FINISH_REASONS) this.finishReasons.push(reason);
    }
    return verdict.bytes === 'original' || verdict.bytes === 'none' ? verdict.bytes : [verdict.bytes];
  }

  /** `[DONE]`: the held usage chunk goes right before it. */
  private done(): 'original' | Buffer[] {
    this.sawDone = true;
    const usage = this.rules.takeUsage();
    return usage === undefined ? 'original' : [usage, DONE_EVENT];
  }
}
