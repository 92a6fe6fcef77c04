/**
 * One HTTP-shaped call to a model server, as the relay (`relay.ts`) makes it: the agent's backends
 * (OpenAI-compatible server, embedded llama.cpp) and the edge's direct providers all answer it.
 * Bodies are OpenAI Chat Completions (docs/protocols.md "Chat Completions"), relayed unchanged.
 */

export interface BackendRequest {
  method: string;
  /** Path relative to the backend's base URL, e.g. `/v1/chat/completions`. */
  path: string;
  /** Lower-case header names. Client credentials are already stripped. */
  headers: Record<string, string>;
  body: Uint8Array;
  /** Aborts the backend request at once (cancel, timeout, shutdown). */
  signal: AbortSignal;
  /** The client request's id, for logs. */
  requestId: string;
}

export interface BackendResponse {
  status: number;
  /** Lower-case header names, hop-by-hop headers removed. */
  headers: Record<string, string>;
  /**
   * Body slices exactly as the backend produced them. A Node `Readable` (undici's body) is read
   * through its 'data' events and paused while the consumer is full, any other iterable pulled:
   * either way a slow reader slows the backend.
   */
  body: AsyncIterable<Uint8Array>;
}

/** Something that answers one backend request (the relay's only need of a backend). */
export interface BackendCall {
  /**
   * Sends one request. Resolves once the backend answered with a status; rejects with the
   * connection error otherwise (see `toRunFailure`).
   */
  handle(request: BackendRequest): Promise<BackendResponse>;
}

/** Request headers never forwarded to a backend: client credentials and hop-by-hop headers (RFC 9110 §7.6.1). */
export const DROPPED_REQUEST_HEADERS = new Set([
  'authorization',
  'x-api-key',
  'cookie',
  'host',
  'connection',
  'keep-alive',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'content-length',
  'expect',
]);

/** Response headers that describe the backend hop only. */
export const DROPPED_RESPONSE_HEADERS = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'upgrade',
  'trailer',
]);
