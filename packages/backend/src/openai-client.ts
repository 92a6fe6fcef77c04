/**
 * The run call to an OpenAI-compatible server (vLLM, SGLang, llama.cpp server, Ollama, a hosted
 * API) over HTTP with undici (keep-alive pool, one origin): the agent's `OpenAiBackend` and the
 * edge's direct providers send their runs through it. The request path is appended to the base
 * URL's path (a trailing `/v1` of the base is dropped: request paths carry their own `/v1`); the
 * client's credentials are stripped and the configured key, if any, is sent as
 * `Authorization: Bearer`.
 *
 * undici's header and body timeouts are off: the relay applies its own first-byte and idle clocks,
 * which pause while the consumer holds the run back.
 */
import type { Pool } from 'undici';
import type { IncomingHttpHeaders } from 'node:http';
import {
  DROPPED_REQUEST_HEADERS,
  DROPPED_RESPONSE_HEADERS,
  type BackendCall,
  type BackendRequest,
  type BackendResponse,
} from './backend-call.js';

export interface OpenAiClientOptions {
  /**
   * Base URL, e.g. `http://127.0.0.1:8000` (a path prefix is kept). A trailing `/v1` is dropped:
   * request paths carry their own `/v1`, and `http://host:8000/v1` is how servers print their URL.
   */
  baseUrl: string;
  apiKey?: string | undefined;
  /** Keep-alive connections to the backend. Default 16. */
  connections?: number | undefined;
  /** Longest wait to establish a connection, ms. Default undici's (10 000). */
  connectTimeoutMs?: number | undefined;
}

/** The base URL's path without trailing slashes and without a trailing `/v1` (`http://h/x/v1/` → `/x`). */
export function basePathOf(baseUrl: string): string {
  return new URL(baseUrl).pathname.replace(/\/+$/, '').replace(/\/v1$/, '');
}

export class OpenAiClient implements BackendCall {
  /** The base URL's origin (`http://host:port`). */
  readonly origin: string;
  /** The base URL's path, see `basePathOf`; request paths are appended to it. */
  readonly pathPrefix: string;
  private readonly pool: Pool;

  constructor(private readonly options: OpenAiClientOptions) {
    const url = new URL(options.baseUrl);
    this.origin = url.origin;
    this.pathPrefix = basePathOf(options.baseUrl);
    // undici is loaded with the first client (~110 modules, ~3.5 MiB of heap): an edge without
    // direct providers loads none of it. The package entry, not its Pool module alone: the entry
    // is what adds `request` and the other call APIs to every dispatcher.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const UndiciPool = (require('undici') as { Pool: typeof Pool }).Pool;
    this.pool = new UndiciPool(url.origin, {
      connections: options.connections ?? 16,
      keepAliveTimeout: 30_000,
      headersTimeout: 0,
      bodyTimeout: 0,
      ...(options.connectTimeoutMs === undefined ? {} : { connect: { timeout: options.connectTimeoutMs } }),
    });
  }

  /** `Authorization: Bearer <apiKey>` when a key is configured, else no header. */
  authHeaders(): Record<string, string> {
    const key = this.options.apiKey;
    return key !== undefined && key !== '' ? { authorization: `Bearer ${key}` } : {};
  }

  async handle(request: BackendRequest): Promise<BackendResponse> {
    const headers: Record<string, string> = {};
    for (const name in request.headers) {
      const lower = name.toLowerCase();
      if (!DROPPED_REQUEST_HEADERS.has(lower)) headers[lower] = request.headers[name]!;
    }
    if (this.options.apiKey !== undefined && this.options.apiKey !== '') {
      headers.authorization = `Bearer ${this.options.apiKey}`;
    }
    const method = request.method.toUpperCase();
    const hasBody = method !== 'GET' && method !== 'HEAD';
    // Bodies from the edge are JSON; FastAPI-based servers (vLLM, SGLang) parse only JSON content types.
    if (hasBody && headers['content-type'] === undefined) headers['content-type'] = 'application/json';
    // The request id travels on to the model server's logs.
    if (headers['x-request-id'] === undefined && request.requestId !== '') headers['x-request-id'] = request.requestId;
    const response = await this.pool.request({
      method: method as 'GET',
      path: this.pathPrefix + request.path,
      headers,
      body: hasBody ? request.body : null,
      signal: request.signal,
    });
    return { status: response.statusCode, headers: flattenHeaders(response.headers), body: response.body };
  }

  /** Closes its connections; requests in flight are aborted. */
  async close(): Promise<void> {
    await this.pool.destroy();
  }
}

function flattenHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const result: Record<string, string> = {};
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined || DROPPED_RESPONSE_HEADERS.has(name)) continue;
    result[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return result;
}
