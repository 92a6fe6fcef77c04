/**
 * Errors in vLLM's shape (docs/protocols.md "Backend extras"): `{"error":{"message","type","param","code"}}` where
 * `type` is an exception-like name and `code` is the integer HTTP status.
 */

/** vLLM's `type` for each status the sim returns. */
const ERROR_TYPES: Readonly<Record<number, string>> = {
  400: 'BadRequestError',
  404: 'NotFoundError',
  405: 'MethodNotAllowedError',
  413: 'BadRequestError',
  429: 'RateLimitError',
  500: 'InternalServerError',
  503: 'ServiceUnavailableError',
};

/** A request the sim refuses; carries the HTTP status (default 400) and an optional `param`. */
export class SimInputError extends Error {
  readonly status: number;
  readonly param: string | null;

  constructor(message: string, options: { status?: number; param?: string } = {}) {
    super(message);
    this.name = 'SimInputError';
    this.status = options.status ?? 400;
    this.param = options.param ?? null;
  }
}

export interface VllmErrorBody {
  error: { message: string; type: string; param: string | null; code: number };
}

/** The vLLM error body for `status`. */
export function vllmError(status: number, message: string, param: string | null = null): VllmErrorBody {
  return { error: { message, type: ERROR_TYPES[status] ?? 'InternalServerError', param, code: status } };
}

/** vLLM's context-length message (serving_engine `_validate_input`). */
export function contextLengthMessage(maxModelLen: number, promptTokens: number, maxTokens: number): string {
  return (
    `This model's maximum context length is ${maxModelLen} tokens. However, you requested ` +
    `${promptTokens + maxTokens} tokens (${promptTokens} in the messages, ${maxTokens} in the completion). ` +
    'Please reduce the length of the messages or completion.'
  );
}
