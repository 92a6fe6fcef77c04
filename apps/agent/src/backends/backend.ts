/**
 * What the agent needs from a model server: one HTTP-shaped call per run, the models it serves,
 * and optional load figures for heartbeats. Both backends speak OpenAI Chat Completions
 * (docs/protocols.md "Chat Completions"), so the edge relays their bytes unchanged.
 */

/** A model as registered with the edge (proto `ModelInfo`). */
export interface ModelInfo {
  id: string;
  /** Context window, tokens; 0 when unknown. */
  contextLength: number;
}

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
  /** Body slices exactly as the backend produced them; pulled, so a slow reader slows the backend. */
  body: AsyncIterable<Uint8Array>;
}

/** Backend load, for heartbeats. A figure the backend does not expose is left out. */
export interface BackendMetrics {
  /** KV-cache usage in [0, 1]. */
  kvCacheUsage?: number;
  /** Requests waiting inside the backend. */
  waiting?: number;
}

export type BackendKind = 'openai' | 'llamacpp';

export interface Backend {
  readonly kind: BackendKind;
  /** The served models; may call the backend (discovery). Throws when the backend is unreachable. */
  models(): Promise<ModelInfo[]>;
  /** Optional capabilities for registration, e.g. `tokenize`. Valid after `models()`. */
  readonly capabilities: string[];
  /**
   * Sends one request. Resolves once the backend answered with a status; rejects with the
   * connection error otherwise (see `toRunFailure`).
   */
  handle(request: BackendRequest): Promise<BackendResponse>;
  metrics?(): Promise<BackendMetrics>;
  close(): Promise<void>;
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
