/**
 * One chunk of the backend's Chat stream (docs/protocols.md "Chat stream", "Chat errors"), as vLLM, SGLang, llama.cpp
 * server and Ollama send it: what an SSE event's data is (`[DONE]`, a chunk, the backend's error, or not a chunk at
 * all), and the readers of a parsed chunk both stream paths share (finish reasons, generated output, tool calls). The
 * normalized decoder (`@iop/dialects` openai-chat/stream-decode.ts) and the passthrough rules (chunk-rules.ts) read
 * chunks only through here.
 */
import type { ErrorEvent } from '@iop/core';
import { errorEventFromUpstream } from './upstream-error.js';

export type JsonObject = Record<string, unknown>;

/** The data of the stream's last event. */
export const DONE_DATA = '[DONE]';

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** What an SSE event's data holds: `[DONE]`, JSON (parsed), or something that is not JSON (`malformed`). */
export type ChunkData = { kind: 'done' } | { kind: 'malformed' } | { kind: 'json'; value: unknown };

/** Parses one SSE event's data (its `data:` lines joined with `\n`). Never throws. */
export function parseChunkData(data: string): ChunkData {
  if (data === DONE_DATA) return { kind: 'done' };
  try {
    return { kind: 'json', value: JSON.parse(data) as unknown };
  } catch {
    return { kind: 'malformed' };
  }
}

/**
 * What a parsed chunk is: `not-object` (a JSON value that is no chunk), the backend's `error` (a non-null `error` key,
 * vLLM, SGLang, llama.cpp server and Ollama alike; or any data of an SSE `event: error`), or a `chunk`.
 */
export type ChunkKind =
  { kind: 'not-object' } | { kind: 'error'; error: ErrorEvent } | { kind: 'chunk'; chunk: JsonObject };

/** Classifies a parsed chunk; `eventType` is the SSE event's `event:` field, when it had one. */
export function classifyChunk(value: unknown, eventType?: string | undefined): ChunkKind {
  if (!isJsonObject(value)) return { kind: 'not-object' };
  if (value.error !== undefined && value.error !== null)
    return { kind: 'error', error: errorEventFromUpstream(value.error) };
  if (eventType === 'error') return { kind: 'error', error: errorEventFromUpstream(value) };
  return { kind: 'chunk', chunk: value };
}

function choicesOf(chunk: unknown): unknown[] {
  const choices = (chunk as { choices?: unknown } | null)?.choices;
  return Array.isArray(choices) ? choices : [];
}

/** The string `finish_reason` values of a parsed chunk's choices. */
export function finishReasonsOf(chunk: unknown): string[] {
  const reasons: string[] = [];
  for (const choice of choicesOf(chunk)) {
    const reason = (choice as { finish_reason?: unknown } | null)?.finish_reason;
    if (typeof reason === 'string') reasons.push(reason);
  }
  return reasons;
}

/** Whether any choice of `chunk` carries a (non-empty) finish reason. */
export function hasFinishReason(chunk: unknown): boolean {
  return finishReasonsOf(chunk).some((reason) => reason.length > 0);
}

/**
 * Whether a parsed chunk carries generated output: a non-empty `content`, `reasoning_content` or `reasoning` in a
 * choice's delta, a non-empty `tool_calls` array, or a legacy completion's non-empty `text`.
 */
export function chunkGenerated(chunk: unknown): boolean {
  for (const choice of choicesOf(chunk)) {
    const text = (choice as { text?: unknown } | null)?.text;
    if (typeof text === 'string' && text !== '') return true;
    const delta = (choice as { delta?: unknown } | null)?.delta;
    if (!isJsonObject(delta)) continue;
    for (const key of ['content', 'reasoning_content', 'reasoning'])
      if (typeof delta[key] === 'string' && delta[key] !== '') return true;
    if (Array.isArray(delta.tool_calls) && delta.tool_calls.length > 0) return true;
  }
  return false;
}

/** Whether a parsed chunk carries a non-empty `tool_calls` array in a choice's delta. */
export function chunkToolCalls(chunk: unknown): boolean {
  return choicesOf(chunk).some((choice) => {
    const calls = (choice as { delta?: { tool_calls?: unknown } } | null)?.delta?.tool_calls;
    return Array.isArray(calls) && calls.length > 0;
  });
}
