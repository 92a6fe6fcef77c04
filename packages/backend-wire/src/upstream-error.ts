/**
 * Upstream errors as backends send them (vLLM, SGLang, llama.cpp server, Ollama; docs/protocols.md "Chat errors"): a
 * non-2xx answer's body, or an in-stream `{"error":{…}}` chunk, read into an `IopError` or a terminal `error` event, so
 * the client gets the error in its own dialect (vLLM's `{type:"BadRequestError", code:400}` never reaches it).
 */
import { IopError, codeOfStatus, type ErrorEvent } from '@iop/core';

/**
 * How backends say the prompt is too long (they have no code for it): vLLM "maximum context
 * length", llama.cpp `exceed_context_size_error` / "exceeds the available context size", SGLang
 * "longer than the model's context length", OpenAI `context_length_exceeded`. This is where an
 * upstream's words become iop's code; nothing downstream reads error messages.
 */
const CONTEXT_LENGTH =
  /maximum context length|context window|context size|context length|context_length_exceeded|exceed_context_size|available context|too many tokens|prompt is too long/i;

function objectOf(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

/**
 * Reads message/type/param out of the shapes upstreams use: `{error:{…}}`, `{error:"…"}`, `{message}`, `{detail}`
 * (FastAPI).
 */
function readErrorBody(body: unknown): {
  message: string | undefined;
  type: string | undefined;
  param: string | undefined;
} {
  let root: unknown = body;
  if (typeof body === 'string') {
    try {
      root = JSON.parse(body);
    } catch {
      return { message: body.trim().slice(0, 500) || undefined, type: undefined, param: undefined };
    }
  }
  const object = objectOf(root);
  if (object === undefined) return { message: undefined, type: undefined, param: undefined };
  const source: Record<string, unknown> = objectOf(object.error) ?? object;
  let message = typeof source.message === 'string' ? source.message : undefined;
  if (message === undefined && typeof object.error === 'string') message = object.error;
  if (message === undefined && typeof object.detail === 'string') message = object.detail;
  return {
    message,
    type: typeof source.type === 'string' ? source.type : undefined,
    param: typeof source.param === 'string' ? source.param : undefined,
  };
}

/**
 * Turns an upstream HTTP error (status + body: parsed JSON, or the raw text) into an `IopError`.
 * The code follows the status (`codeOfStatus`: 422 `unprocessable_entity`, 500
 * `upstream_internal`…), except that a context overflow (vLLM "maximum context length",
 * llama.cpp `exceed_context_size_error`) becomes `context_length_exceeded`. vLLM's exception-like
 * `type` (`BadRequestError`) and integer `code` are not passed on: the client gets the OpenAI type
 * of the iop code (docs/protocols.md "Errors across dialects"), and the status of that code.
 */
export function normalizeUpstreamError(status: number, body: unknown): IopError {
  const { message, type, param } = readErrorBody(body);
  let code = codeOfStatus(status);
  if (code === 'invalid_request' && (CONTEXT_LENGTH.test(message ?? '') || CONTEXT_LENGTH.test(type ?? ''))) {
    code = 'context_length_exceeded';
  }
  const options: { param?: string; cause: unknown } = { cause: body };
  if (param !== undefined) options.param = param;
  return new IopError(code, message ?? `upstream answered HTTP ${status}`, options);
}

/**
 * An in-stream upstream error object (`data: {"error":{…}}`) as a terminal `error` event. The
 * code comes from an integer `code` (vLLM) when it is an HTTP status, else it is
 * `upstream_error` (502).
 */
export function errorEventFromUpstream(error: unknown): ErrorEvent {
  const object = objectOf(error);
  const rawCode = object?.code;
  const status = typeof rawCode === 'number' && rawCode >= 400 && rawCode <= 599 ? rawCode : 502;
  const normalized = normalizeUpstreamError(status, object === undefined ? error : { error: object });
  return { type: 'error', code: normalized.code, message: normalized.message };
}

/** At most this much of an error body is read, bytes. */
export const MAX_ERROR_BODY_BYTES = 64 * 1024;

/**
 * A non-2xx answer (status, its body's bytes — at most `MAX_ERROR_BODY_BYTES` are read — and its `Retry-After`) as an
 * `IopError`: `normalizeUpstreamError` of the body (JSON when it parses, else its text), with a `Retry-After` in
 * delay-seconds as the error's `retryAfterSeconds` when the body gave none.
 */
export function upstreamErrorOf(status: number, body: Uint8Array, retryAfter: string | undefined): IopError {
  const text = Buffer.from(body.buffer, body.byteOffset, body.byteLength)
    .toString('utf8')
    .slice(0, MAX_ERROR_BODY_BYTES);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = text;
  }
  const error = normalizeUpstreamError(status, parsed);
  const seconds = retryAfter === undefined ? undefined : Number(retryAfter);
  if (seconds !== undefined && Number.isFinite(seconds) && error.retryAfterSeconds === undefined) {
    return new IopError(error.code, error.message, {
      retryAfterSeconds: seconds,
      ...(error.param === undefined ? {} : { param: error.param }),
    });
  }
  return error;
}
