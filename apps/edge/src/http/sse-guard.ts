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
 * backend's bytes unchanged and uncopied, and a string parser would decode and re-encode every chunk. What a chunk
 * says is read by `@iop/backend-wire`, the backend's wire (the event's fields `SseEventFields`, the byte scan of a
 * chunk `ChunkKeys`, the parsed readers and `ChunkRules`); this guard decides what is relayed.
 *
 * Only complete events are passed on: a frame that ends mid-event holds that part until the next frame (backends write
 * an event per write, so this costs no latency in practice).
 */
import {
  ChunkKeys,
  ChunkRules,
  SseEventFields,
  STOP_LABEL,
  TOOL_CALLS_LABEL,
  chunkGenerated,
  chunkToolCalls,
  finishReasonsOf,
  isDoneBytes,
  isObjectBytes,
  parseChunkData,
  trimSpaces,
  withDeliveredFinish,
  type JsonObject,
} from '@iop/backend-wire';
import { IopError, SSE_DONE, type Usage } from '@iop/core';

const NEWLINE = 0x0a;
const CR = 0x0d;
const DONE_EVENT = Buffer.from(SSE_DONE);
const EMPTY = Buffer.alloc(0);
/** Finish reasons kept per stream (a choice each; `n` is rarely above a few). */
const MAX_FINISH_REASONS = 16;

export interface GuardResult {
  /** Bytes to send now: complete events, up to (not including) a failing one. */
  safe: Buffer;
  /** The stream must end here (malformed chunk or backend error chunk): send `safe`, then this as an in-band error. */
  failure: IopError | undefined;
}

function malformed(): IopError {
  return new IopError('upstream_error', 'upstream failure: the backend sent a malformed stream chunk');
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
  /** The event being scanned: its data lines as ranges of the current buffer, its type. */
  private readonly event = new SseEventFields();
  private readonly keys = new ChunkKeys();

  constructor(options: { includeUsage: boolean; choices?: number | undefined }) {
    this.rules = new ChunkRules(options.includeUsage);
    this.choices = Math.max(1, options.choices ?? 1);
  }

  /** Every choice's finish reason has passed: the answer is whole (a cut after it is complete). */
  get sawFinish(): boolean {
    return this.finishes >= this.choices;
  }

  /** The last usage the rules parsed (see `ChunkRules.parsedUsage`). */
  get parsedUsage(): Usage | undefined {
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
    this.event.reset();
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
        if (last && lineEnd > start) this.event.addLine(data, start, lineEnd);
        // Blank line (or the stream's end): the event is complete.
        if (this.event.dataLines > 0) {
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
        this.event.reset();
        eventStart = next;
      } else {
        this.event.addLine(data, start, lineEnd);
      }
      start = next;
      if (last) break;
    }
    if (eventStart < data.length) this.partial = Buffer.from(data.subarray(eventStart));
    const tail = data.subarray(emitFrom, eventStart);
    return { safe: parts === undefined ? tail : Buffer.concat([...parts, tail]), failure: undefined };
  }

  /**
   * Decides one complete event: `original` (send its bytes), `none` (drop it), replacement bytes,
   * `fail` (malformed) or the backend's error.
   */
  private dispatch(data: Buffer): 'original' | 'none' | 'fail' | IopError | Buffer[] {
    if (this.event.dataLines > 1) return this.reframe(data);
    const [from, to] = trimSpaces(data, this.event.firstFrom, this.event.firstTo);
    if (from === to) return 'original';
    if (isDoneBytes(data, from, to)) return this.done();
    if (!isObjectBytes(data, from, to)) return 'fail';
    const keys = this.keys;
    keys.scan(data, from, to);
    if (keys.generated) this.generatedChunks++;
    if (keys.toolCalls) this.sawToolCall = true;
    let misLabelled = false;
    if (keys.finished(data)) {
      this.finishes++;
      misLabelled = keys.finishIs(data, to, this.sawToolCall ? STOP_LABEL : TOOL_CALLS_LABEL);
      // Once per finished choice; a mislabelled one is recorded as delivered, once rewritten (`applyRules`).
      const reason = misLabelled ? undefined : keys.finishReason(data, to);
      if (reason !== undefined && this.finishReasons.length < MAX_FINISH_REASONS) this.finishReasons.push(reason);
    }
    const hasUsage = keys.hasUsage(data);
    const hasError = this.event.errorEvent || keys.hasError(data);
    if (!hasUsage && !hasError && !misLabelled) return 'original';
    if (!hasError && !misLabelled && keys.choicesEmpty(data)) {
      // Already the conformant usage chunk (vLLM, SGLang, llama.cpp server): held as it came, unparsed.
      this.rules.holdUsageEvent(data.subarray(from, to));
      return 'none';
    }
    return this.applyRules(data.toString('utf8', from, to), false, misLabelled);
  }

  /** A multi-line data event: the lines joined with `\n` are the payload (SSE), re-sent on one line. */
  private reframe(data: Buffer): 'original' | 'none' | 'fail' | IopError | Buffer[] {
    const payload = this.event.payload(data);
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
    const parsed = parseChunkData(payload);
    if (parsed.kind !== 'json') return 'fail';
    const chunk = parsed.value;
    // A one-line chunk was counted by its scan (`dispatch`).
    let reframe = multiLine || misLabelled;
    if (multiLine) {
      if (chunkGenerated(chunk)) this.generatedChunks++;
      if (chunkToolCalls(chunk)) this.sawToolCall = true;
    }
    if (multiLine || misLabelled) {
      const saw = this.sawToolCall;
      if (typeof chunk === 'object' && chunk !== null && withDeliveredFinish(chunk as JsonObject, () => saw))
        reframe = true;
    }
    const verdict = this.rules.apply(chunk, { errorEvent: this.event.errorEvent, reframe });
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
