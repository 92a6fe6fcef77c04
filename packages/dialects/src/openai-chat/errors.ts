/**
 * The OpenAI error envelope (docs/protocols.md "Chat errors", "Errors across dialects"): iop's `IopError` rendered as
 * `{error:{message,type,param,code}}`. Upstream error bodies (vLLM, SGLang, llama.cpp server, Ollama) are read back
 * into an `IopError` by `@iop/backend-wire` (upstream-error.ts).
 */
import type { ErrorCode, IopError } from '@iop/core';

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
