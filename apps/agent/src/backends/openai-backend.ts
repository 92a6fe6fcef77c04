/**
 * Backend for any OpenAI-compatible server (vLLM, SGLang, llama.cpp server, Ollama). Runs go
 * through `@iop/backend`'s `OpenAiClient` (the same call the edge's direct providers make: the
 * assignment's path appended to the base URL's path, client credentials stripped, the backend key
 * sent as `Authorization: Bearer`); this class adds what only the agent needs.
 *
 * Models come from `--models` (names as given, no discovery) or from `GET /v1/models`, reading the
 * context window from `max_model_len` (vLLM), `context_length` (SGLang, others) or
 * `meta.n_ctx_train` (llama.cpp server). The `tokenize` capability is set when `POST /tokenize`
 * answers 200 (vLLM).
 *
 * The APIs each model is served with (`ModelInfo.apis`) come from `--apis`, or from probes: a
 * `POST` of `{"model": id}` alone (no input, so nothing is computed) to `/v1/completions`,
 * `/v1/embeddings` and `/v1/rerank`. A server that has the route answers a validation error
 * (400/422); one without it 404 (vLLM registers only its model's task routes, e.g. no
 * `/v1/completions` for an embedding model), 405, or 501 (llama.cpp server without
 * `--embeddings` / `--rerank`). Chat is taken to come with completions (vLLM, SGLang, llama.cpp
 * server and Ollama serve both or neither) and probed only when completions is absent. A probe
 * that fails (timeout, connection), or probes that find no route at all, leave the model's APIs
 * unknown: every API is tried.
 */
import { Pool } from 'undici';
import { OpenAiClient } from '@iop/backend';
import type {
  Backend,
  BackendMetrics,
  BackendRequest,
  BackendResponse,
  ChatTokenizeOptions,
  ModelInfo,
  ServedApi,
} from './backend.js';
import { parseVllmMetrics } from './prometheus-metrics.js';

export interface OpenAiBackendOptions {
  /**
   * Base URL, e.g. `http://127.0.0.1:8000` (a path prefix is kept). A trailing `/v1` is dropped:
   * request paths carry their own `/v1`, and `http://host:8000/v1` is how servers print their URL.
   */
  baseUrl: string;
  apiKey?: string;
  /** Served model names as given; skips discovery. */
  models?: string[];
  /** The APIs every model is served with, as given; skips the probes. */
  apis?: readonly ServedApi[];
  /** Keep-alive connections to the backend. Default 16. */
  connections?: number;
  /** Timeout of discovery, probe and metrics calls, ms. Default 5 000. */
  probeTimeoutMs?: number;
  /** Longest wait to establish a connection, ms. Default undici's (10 000). */
  connectTimeoutMs?: number;
}

/** Largest `/metrics` exposition read, bytes (vLLM's is tens of KiB). */
const MAX_METRICS_BYTES = 4 << 20;

/** How long an absent `/metrics` is not asked again, ms. */
const METRICS_ABSENT_RETRY_MS = 60_000;

export class OpenAiBackend implements Backend {
  readonly kind = 'openai' as const;
  capabilities: string[] = [];
  /** The run calls. */
  private readonly client: OpenAiClient;
  /**
   * Discovery, `/tokenize` and `/metrics` probes: their own connections with their own deadline,
   * so a probe never waits behind runs holding every connection of `client` (a saturated backend).
   */
  private readonly probePool: Pool;
  private readonly pathPrefix: string;
  private readonly probeTimeoutMs: number;
  private metricsAbsentUntil = 0;

  constructor(private readonly options: OpenAiBackendOptions) {
    this.client = new OpenAiClient({
      baseUrl: options.baseUrl,
      apiKey: options.apiKey,
      connections: options.connections,
      connectTimeoutMs: options.connectTimeoutMs,
    });
    this.pathPrefix = this.client.pathPrefix;
    this.probeTimeoutMs = options.probeTimeoutMs ?? 5_000;
    this.probePool = new Pool(this.client.origin, {
      connections: 2,
      keepAliveTimeout: 30_000,
      headersTimeout: this.probeTimeoutMs,
      bodyTimeout: this.probeTimeoutMs,
      connect: { timeout: Math.min(this.probeTimeoutMs, options.connectTimeoutMs ?? this.probeTimeoutMs) },
    });
  }

  async models(): Promise<ModelInfo[]> {
    let models: ModelInfo[];
    if (this.options.models !== undefined && this.options.models.length > 0) {
      models = this.options.models.map((id) => ({ id, contextLength: 0 }));
    } else {
      const body = await this.getJson('/v1/models');
      models = modelsOf(body);
      if (models.length === 0) throw new Error(`${this.options.baseUrl}/v1/models lists no models`);
    }
    this.capabilities = (await this.answersTokenize(models[0]!.id)) ? ['tokenize'] : [];
    const given = this.options.apis;
    return Promise.all(
      models.map(async (model) => ({
        ...model,
        ...(given === undefined ? await this.probeApis(model.id) : { apis: given }),
      })),
    );
  }

  /** The APIs `model` is served with, from route probes (see the module docstring); `{}` when a probe failed. */
  private async probeApis(model: string): Promise<{ apis?: ServedApi[] }> {
    const probe = (path: string) => this.hasRoute(path, model);
    const [completions, embeddings, rerank] = await Promise.all([
      probe('/v1/completions'),
      probe('/v1/embeddings'),
      probe('/v1/rerank'),
    ]);
    const chat = completions === true ? true : await probe('/v1/chat/completions');
    const found: Array<[ServedApi, boolean | undefined]> = [
      ['chat', chat],
      ['completions', completions],
      ['embeddings', embeddings],
      ['rerank', rerank],
    ];
    const apis = found.filter(([, served]) => served === true).map(([api]) => api);
    // A failed probe, or no route at all (not an OpenAI-compatible server as far as the probes tell): unknown.
    if (found.some(([, served]) => served === undefined) || apis.length === 0) return {};
    return { apis };
  }

  /**
   * Whether the server has the route `path` for `model` (a validation error) or not (404, 405, 501); undefined when the
   * probe failed.
   */
  private async hasRoute(path: string, model: string): Promise<boolean | undefined> {
    try {
      const response = await this.probePool.request({
        method: 'POST',
        path: this.pathPrefix + path,
        headers: { ...this.authHeaders(), 'content-type': 'application/json' },
        body: JSON.stringify({ model }),
        signal: AbortSignal.timeout(this.probeTimeoutMs),
      });
      await response.body.dump();
      return ![404, 405, 501].includes(response.statusCode);
    } catch {
      return undefined;
    }
  }

  handle(request: BackendRequest): Promise<BackendResponse> {
    return this.client.handle(request);
  }

  async metrics(): Promise<BackendMetrics> {
    if (Date.now() < this.metricsAbsentUntil) return {};
    try {
      const response = await this.probePool.request({
        method: 'GET',
        path: `${this.pathPrefix}/metrics`,
        headers: this.authHeaders(),
        signal: AbortSignal.timeout(this.probeTimeoutMs),
      });
      if (response.statusCode !== 200) {
        await response.body.dump();
        this.metricsAbsentUntil = Date.now() + METRICS_ABSENT_RETRY_MS;
        return {};
      }
      const metrics = parseVllmMetrics(await readCapped(response.body, MAX_METRICS_BYTES));
      if (metrics.kvCacheUsage === undefined && metrics.waiting === undefined) {
        this.metricsAbsentUntil = Date.now() + METRICS_ABSENT_RETRY_MS;
      }
      return metrics;
    } catch {
      return {};
    }
  }

  /**
   * `POST /tokenize {model, messages, tools?, add_generation_prompt}` on the probe connections (vLLM, SGLang): the
   * prompt's `tokens`.
   */
  async tokenizeChat(
    model: string,
    messages: readonly unknown[],
    options: ChatTokenizeOptions = {},
  ): Promise<number[]> {
    const { signal, tools, addGenerationPrompt = true } = options;
    const timeout = AbortSignal.timeout(this.probeTimeoutMs);
    const response = await this.probePool.request({
      method: 'POST',
      path: `${this.pathPrefix}/tokenize`,
      headers: { ...this.authHeaders(), 'content-type': 'application/json' },
      body: JSON.stringify({
        model,
        messages,
        ...(tools === undefined ? {} : { tools }),
        add_generation_prompt: addGenerationPrompt,
      }),
      signal: signal === undefined ? timeout : AbortSignal.any([signal, timeout]),
    });
    if (response.statusCode !== 200) {
      await response.body.dump();
      throw new Error(`POST /tokenize answered ${response.statusCode}`);
    }
    const tokens = ((await response.body.json()) as { tokens?: unknown } | null)?.tokens;
    if (!Array.isArray(tokens) || !tokens.every((id) => Number.isInteger(id)))
      throw new Error('POST /tokenize answered without integer `tokens`');
    return tokens as number[];
  }

  async close(): Promise<void> {
    await Promise.all([this.client.close(), this.probePool.destroy()]);
  }

  private async getJson(path: string): Promise<unknown> {
    const response = await this.probePool.request({
      method: 'GET',
      path: this.pathPrefix + path,
      headers: this.authHeaders(),
      signal: AbortSignal.timeout(this.probeTimeoutMs),
    });
    if (response.statusCode !== 200) {
      await response.body.dump();
      throw new Error(`GET ${path} answered ${response.statusCode}`);
    }
    return response.body.json();
  }

  private async answersTokenize(model: string): Promise<boolean> {
    try {
      const response = await this.probePool.request({
        method: 'POST',
        path: `${this.pathPrefix}/tokenize`,
        headers: { ...this.authHeaders(), 'content-type': 'application/json' },
        body: JSON.stringify({ model, prompt: 'hello' }),
        signal: AbortSignal.timeout(this.probeTimeoutMs),
      });
      await response.body.dump();
      return response.statusCode === 200;
    } catch {
      return false;
    }
  }

  private authHeaders(): Record<string, string> {
    return this.client.authHeaders();
  }
}

/** Reads an OpenAI `GET /v1/models` list: `{data:[{id, max_model_len?|context_length?|meta.n_ctx_train?}]}`. */
export function modelsOf(body: unknown): ModelInfo[] {
  const data = (body as { data?: unknown } | null)?.data;
  if (!Array.isArray(data)) return [];
  const models: ModelInfo[] = [];
  for (const entry of data as unknown[]) {
    if (typeof entry !== 'object' || entry === null) continue;
    const record = entry as Record<string, unknown>;
    if (typeof record.id !== 'string') continue;
    const meta = record.meta as Record<string, unknown> | undefined;
    const length = [record.max_model_len, record.context_length, meta?.n_ctx_train].find(
      (value) => typeof value === 'number' && Number.isInteger(value) && value > 0,
    );
    models.push({ id: record.id, contextLength: (length as number | undefined) ?? 0 });
  }
  return models;
}

/** Reads a body as UTF-8 text up to `maxBytes`; the rest is dropped and the body destroyed. */
async function readCapped(body: AsyncIterable<Uint8Array> & { destroy(): unknown }, maxBytes: number): Promise<string> {
  const slices: Uint8Array[] = [];
  let bytes = 0;
  for await (const slice of body) {
    bytes += slice.length;
    if (bytes > maxBytes) {
      body.destroy();
      break;
    }
    slices.push(slice);
  }
  return Buffer.concat(slices).toString('utf8');
}
