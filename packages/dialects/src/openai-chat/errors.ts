/**
 * The OpenAI error envelope (docs/protocols.md "Chat errors", "Errors across dialects"): iop's `IopError` rendered as
 * `{error:{message,type,param,code}}`, and upstream error bodies (vLLM, SGLang, llama.cpp server,
 * Ollama) read back into an `IopError`.
 */
import { IopError, codeOfStatus, type ErrorCode, type ErrorEvent } from '@iop/core';
import type { ChatErrorObject } from './wire-types.js';

/** The body an OpenAI client receives on failure (`Shared.ErrorObject` in an `error` key). */
export interface OpenAIErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

/**
 * `type` and `code` per iop code (docs/protocols.md "Errors across dialects"; OpenAI uses `invalid_request_error` +
 * `model_not_found` for unknown models).
 */
const ENVELOPE: Record<ErrorCode, { type: string; code: string | null }> = {
  invalid_request: { type: 'invalid_request_error', code: null },
  unsupported_field: { type: 'invalid_request_error', code: 'unsupported_parameter' },
  context_length_exceeded: { type: 'invalid_request_error', code: 'context_length_exceeded' },
  authentication: { type: 'authentication_error', code: 'invalid_api_key' },
  permission: { type: 'permission_error', code: null },
  not_found: { type: 'invalid_request_error', code: 'not_found' },
  model_not_found: { type: 'invalid_request_error', code: 'model_not_found' },
  method_not_allowed: { type: 'invalid_request_error', code: 'method_not_allowed' },
  request_timeout: { type: 'server_error', code: 'timeout' },
  conflict: { type: 'invalid_request_error', code: null },
  request_too_large: { type: 'invalid_request_error', code: 'request_too_large' },
  unprocessable_entity: { type: 'invalid_request_error', code: null },
  rate_limited: { type: 'rate_limit_error', code: 'rate_limit_exceeded' },
  // The edge's admission queue refused: what the OpenAI SDKs back off on (429 with Retry-After).
  overloaded: { type: 'rate_limit_error', code: 'rate_limit_exceeded' },
  internal: { type: 'server_error', code: null },
  upstream_internal: { type: 'server_error', code: 'upstream_error' },
  upstream_error: { type: 'server_error', code: 'upstream_error' },
  no_capacity: { type: 'server_error', code: 'no_capacity' },
  timeout: { type: 'server_error', code: 'timeout' },
};

/** Renders an error for an OpenAI client (HTTP body, or the in-stream `data: {"error":…}` payload). */
export function toOpenAIErrorBody(
  error: Pick<IopError, 'code' | 'message'> & { param?: string | undefined },
): OpenAIErrorBody {
  const envelope = ENVELOPE[error.code];
  return { error: { message: error.message, type: envelope.type, param: error.param ?? null, code: envelope.code } };
}

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
  const inner = objectOf(object.error) as ChatErrorObject | undefined;
  const source: Record<string, unknown> = (inner as Record<string, unknown> | undefined) ?? object;
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
