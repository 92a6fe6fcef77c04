/**
 * The rules a relayed Chat Completions stream must follow whatever the backend's framing (docs/protocols.md "Chat
 * stream", "Chat errors"), applied to one parsed chunk. The byte scanner (`SseGuard`) calls this only for the rare
 * chunks that need it: those carrying a non-null `usage` or an `error` key, and SSE events whose data spans several
 * `data:` lines.
 *
 * - An error chunk (`{"error":{…}}`, vLLM, SGLang, llama.cpp server and Ollama alike; or any data of an SSE `event:
 *   error`) ends the stream as a failure.
 * - Usage, with `stream_options.include_usage`: exactly one final chunk `{…, choices: [], usage}`. A usage object on a
 *   chunk that has choices (llama.cpp server puts it on the finish chunk; vLLM `continuous_usage_stats` on every chunk)
 *   is taken off that chunk (`usage: null`, as OpenAI sends it) and kept; a usage chunk without a `choices` key gets
 *   `choices: []`. The last usage seen wins and goes out once, right before `[DONE]`.
 * - Usage the client did not ask for is removed (a usage-only chunk is dropped).
 * - The finish reason follows what was delivered (`deliveredFinishReason`): `tool_calls` on an answer that relayed no
 *   tool call is `stop`, `stop` after tool calls is `tool_calls` (`withDeliveredFinish`; the scanner sends only such
 *   chunks here).
 */
import { IopError, deliveredFinishReason, iopErrorOf, sseFrame, sseJson, type Usage } from '@iop/core';
import { chatUsageOf } from './chat-usage.js';
import { classifyChunk, hasFinishReason, isJsonObject as isObject, type JsonObject } from './chunk.js';

export type ChunkVerdict =
  /**
   * `original`: send the event as it came; a Buffer: send it instead (a complete SSE event); `none`: drop the event.
   */
  { kind: 'emit'; bytes: Buffer | 'original' | 'none'; finished: boolean } | { kind: 'error'; error: IopError };

/** One SSE event carrying `payload` as a single data line. */
export function dataEvent(payload: unknown): Buffer {
  return Buffer.from(sseJson(payload));
}

/**
 * Rewrites, in place, the `finish_reason` of each choice of `chunk` that disagrees with whether a
 * tool call was delivered (`stop` ⇄ `tool_calls`; other labels are left alone).
 * @returns whether anything changed.
 */
export function withDeliveredFinish(chunk: JsonObject, toolCallDelivered: (choice: JsonObject) => boolean): boolean {
  const choices = chunk.choices;
  if (!Array.isArray(choices)) return false;
  let changed = false;
  for (const choice of choices) {
    if (!isObject(choice) || (choice.finish_reason !== 'stop' && choice.finish_reason !== 'tool_calls')) continue;
    const delivered = deliveredFinishReason(choice.finish_reason, toolCallDelivered(choice));
    if (delivered === choice.finish_reason) continue;
    choice.finish_reason = delivered;
    changed = true;
  }
  return changed;
}

const TOOL_CALLS_TEXT = Buffer.from('"tool_calls"');

/**
 * A non-stream Chat answer with each choice's `finish_reason` following its `message.tool_calls`
 * (`withDeliveredFinish`). Parsed only when its bytes mention `"tool_calls"` (a label or a key):
 * a plain text answer is returned as it came.
 */
export function deliveredAnswer(body: Buffer): Buffer {
  if (body.indexOf(TOOL_CALLS_TEXT) === -1) return body;
  let answer: unknown;
  try {
    answer = JSON.parse(body.toString('utf8'));
  } catch {
    return body;
  }
  if (!isObject(answer)) return body;
  const changed = withDeliveredFinish(answer, (choice) => {
    const calls = isObject(choice.message) ? choice.message.tool_calls : undefined;
    return Array.isArray(calls) && calls.length > 0;
  });
  return changed ? Buffer.from(JSON.stringify(answer)) : body;
}

export class ChunkRules {
  /** The usage chunk to send before `[DONE]` (include_usage only): parsed, or a conformant chunk's own bytes. */
  private heldUsage: JsonObject | Buffer | undefined;
  /**
   * The last usage parsed here (multi-line events, usage on a chunk with choices; `chatUsageOf`: a count not reported
   * stays undefined): billing's fallback when the agent's usage scan missed it.
   */
  parsedUsage: Usage | undefined;

  constructor(private readonly includeUsage: boolean) {}

  /**
   * Applies the rules to one parsed chunk. `errorEvent`: the SSE event type was `error`.
   * `reframe`: the original bytes cannot be sent as they are (multi-line data).
   */
  apply(value: unknown, options: { errorEvent: boolean; reframe: boolean }): ChunkVerdict {
    const read = classifyChunk(value, options.errorEvent ? 'error' : undefined);
    if (read.kind === 'not-object')
      return {
        kind: 'error',
        error: new IopError(
          'upstream_error',
          'upstream failure: the backend sent a stream chunk that is not a JSON object',
        ),
      };
    if (read.kind === 'error') return { kind: 'error', error: iopErrorOf(read.error) };
    const chunk = read.chunk;
    const finished = hasFinishReason(chunk);
    const usage = chunk.usage;
    if (!isObject(usage)) return { kind: 'emit', bytes: options.reframe ? dataEvent(chunk) : 'original', finished };
    this.parsedUsage = chatUsageOf(usage);
    const choices = chunk.choices;
    const hasChoices = Array.isArray(choices) && choices.length > 0;
    if (this.includeUsage) this.heldUsage = { ...chunk, choices: [], usage };
    if (!hasChoices) return { kind: 'emit', bytes: 'none', finished };
    return {
      kind: 'emit',
      bytes: dataEvent(this.includeUsage ? { ...chunk, usage: null } : withoutUsage(chunk)),
      finished,
    };
  }

  /** A chunk already of the form `{…, choices: [], usage: {…}}` (its JSON text); kept only with include_usage. */
  holdUsageEvent(payload: Buffer): void {
    if (this.includeUsage) this.heldUsage = Buffer.from(sseFrame(payload.toString('utf8')));
  }

  /** The one usage chunk, once (before `[DONE]` or at the end); undefined when none was seen. */
  takeUsage(): Buffer | undefined {
    const held = this.heldUsage;
    this.heldUsage = undefined;
    return held === undefined || Buffer.isBuffer(held) ? held : dataEvent(held);
  }
}

function withoutUsage(chunk: JsonObject): JsonObject {
  const copy = { ...chunk };
  delete copy.usage;
  return copy;
}
