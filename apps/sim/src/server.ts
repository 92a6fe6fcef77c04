/**
 * The sim's HTTP server on `node:http`: routing, body reading, abort tracking, start and close.
 *
 * Routes (vLLM's OpenAI-compatible server): `POST /v1/chat/completions`, `POST /v1/completions`,
 * `POST /v1/embeddings`, `POST /v1/rerank` (also `/rerank`, `/v2/rerank`), `POST /v1/score` (also
 * `/score`), `GET /v1/models`, `POST /tokenize`, `POST /reset_prefix_cache` (with a profile),
 * `GET /health`, `GET /metrics` (vllm-metrics.ts with a GPU profile; without one a
 * minimal exposition of the running count, as agents probe a real server's); and the control API
 * under `/_sim/` (control-api.ts).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { handleChatCompletion, type SimContext } from './chat-handler.js';
import { handleControl } from './control-api.js';
import { sendError, sendJson, type Exchange } from './exchange.js';
import { FaultQueue } from './fault-queue.js';
import { DEFAULT_KNOBS, type Knobs } from './knobs.js';
import { RequestLog, newRecord, type RequestRecord } from './request-log.js';
import { SimInputError } from './sim-error.js';
import { handleTokenize, modelsBody } from './vllm-routes.js';
import { handleCompletions } from './completions-handler.js';
import { handleEmbeddings } from './embeddings-handler.js';
import { handleRerank, handleScore } from './rerank-handler.js';
import { resolveProfile, type GpuProfile } from './gpu-profile.js';
import { GpuScheduler } from './gpu-scheduler.js';
import { VllmMetrics } from './vllm-metrics.js';
import { KvEventPublisher, type KvEventsOptions } from './kv-events.js';

export interface SimOptions {
  /** TCP port; 0 (default) picks a free one. */
  port?: number;
  /** Listen address, default `127.0.0.1`. */
  host?: string;
  /** Served model names, default `['sim-model']`. */
  models?: readonly string[];
  /** Knob defaults (the CLI flags); unset ones take DEFAULT_KNOBS. */
  knobs?: Partial<Knobs>;
  /** Request records kept for `GET /_sim/requests`, default 10,000. */
  requestLogSize?: number;
  /** Largest accepted request body (bytes), default 32 MiB; larger gets 413. */
  maxBodyBytes?: number;
  /** A GPU timing profile (`gpu-h100-8b`, see gpu-profile.ts); default none: the knobs' fixed TTFT and ITL. */
  profile?: string;
  /** Overrides of the profile's figures (e.g. `{ maxNumSeqs: 8 }`). */
  profileOverrides?: Partial<GpuProfile>;
  /** Multiplies every simulated delay (profile and `ttft-ms`/`itl-ms` knobs), default 1; 0.01 = 100× faster. */
  timeScale?: number;
  /** Publish the KV cache's events over ZMQ in vLLM's format (needs a profile); kv-events.ts. */
  kvEvents?: KvEventsOptions;
}

export interface SimServer {
  port: number;
  host: string;
  /** `http://<host>:<port>` */
  url: string;
  log: RequestLog;
  faults: FaultQueue;
  /** The GPU model when a profile is selected. */
  gpu: GpuScheduler | undefined;
  /** The bound KV event endpoints when `kvEvents` was given. */
  kvEvents: KvEventPublisher['endpoints'] | undefined;
  /** Stops listening and destroys open connections (stalled streams included). */
  close(): Promise<void>;
}

const DEFAULT_MAX_BODY_BYTES = 32 * 1024 * 1024;

function readBody(req: IncomingMessage, maxBytes: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        reject(new SimInputError(`request body larger than ${maxBytes} bytes`, { status: 413 }));
        req.removeAllListeners('data');
        req.resume();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () =>
      resolve(chunks.length === 0 ? undefined : chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size)),
    );
    req.on('error', reject);
  });
}

function parseJson(raw: Buffer | undefined): unknown {
  if (raw === undefined) return undefined;
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch (error) {
    throw new SimInputError(`Invalid JSON body: ${(error as Error).message}`);
  }
}

function detachedRecord(exchangeReq: IncomingMessage, path: string): RequestRecord {
  return newRecord(0, exchangeReq.method ?? 'GET', path, exchangeReq.headers);
}

async function route(
  context: SimContext,
  exchange: Exchange,
  path: string,
  maxBodyBytes: number,
  modelsJson: string,
  metrics: VllmMetrics | undefined,
): Promise<void> {
  const { req, record } = exchange;
  const body = req.method === 'POST' ? parseJson(await readBody(req, maxBodyBytes)) : undefined;
  record.body = body ?? null;
  if (path.startsWith('/_sim/')) {
    handleControl(context, exchange, path, body);
    return;
  }
  switch (`${req.method} ${path}`) {
    case 'POST /v1/chat/completions':
      handleChatCompletion(context, exchange, body);
      return;
    case 'POST /v1/completions':
      handleCompletions(context, exchange, body);
      return;
    case 'POST /v1/embeddings':
      handleEmbeddings(context, exchange, body);
      return;
    case 'POST /v1/rerank':
    case 'POST /rerank':
    case 'POST /v2/rerank':
      handleRerank(context, exchange, body);
      return;
    case 'POST /v1/score':
    case 'POST /score':
      handleScore(context, exchange, body);
      return;
    case 'GET /v1/models':
      sendJson(exchange, 200, modelsJson);
      return;
    case 'POST /tokenize':
      handleTokenize(context, exchange, body);
      return;
    case 'POST /reset_prefix_cache':
      // vLLM's (dev-mode) route: refused while requests hold blocks, as vLLM's reset is.
      if (context.gpu === undefined) sendError(exchange, 404, 'the prefix cache needs a GPU profile (--profile)');
      else if (context.gpu.prefixCache.clear()) sendJson(exchange, 200, '{}');
      else sendError(exchange, 400, 'Failed to reset prefix cache: requests are running');
      return;
    case 'GET /health':
      sendJson(exchange, 200, '{}');
      return;
    case 'GET /metrics':
      if (metrics !== undefined) {
        const text = await metrics.text();
        exchange.res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text);
        return;
      }
      // Without a profile, a minimal vLLM-style exposition, so agents probe it as they probe a real server's.
      exchange.res
        .writeHead(200, { 'content-type': 'text/plain; version=0.0.4' })
        .end(
          `# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running ${context.log.stats.inFlight}\n# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting 0\n# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc 0\n`,
        );
      return;
    default:
      // FastAPI's shape for unknown routes, as vLLM answers them.
      exchange.record.status = 404;
      exchange.res.writeHead(404, { 'content-type': 'application/json' }).end('{"detail":"Not Found"}');
  }
}

/**
 * Starts a sim and resolves once it listens.
 * @throws RangeError on invalid options; rejects when the port cannot be bound.
 */
export async function startSim(options: SimOptions = {}): Promise<SimServer> {
  const models = options.models ?? ['sim-model'];
  if (models.length === 0 || models.some((model) => model.length === 0 || model.includes('@'))) {
    throw new RangeError(`models must be non-empty names without '@', got ${JSON.stringify(models)}`);
  }
  const timeScale = options.timeScale ?? 1;
  if (!(timeScale > 0) || !Number.isFinite(timeScale))
    throw new RangeError(`timeScale must be a number > 0, got ${timeScale}`);
  const profile = options.profile === undefined ? undefined : resolveProfile(options.profile, options.profileOverrides);
  const profileKnobs: Partial<Knobs> =
    profile === undefined ? {} : { outputTokens: profile.outputTokens, maxModelLen: profile.maxModelLen };
  const defaults: Knobs = Object.freeze({ ...DEFAULT_KNOBS, ...profileKnobs, ...options.knobs });
  const log = new RequestLog(options.requestLogSize);
  let metrics: VllmMetrics | undefined;
  if (options.kvEvents !== undefined && profile === undefined)
    throw new RangeError('KV events need a GPU profile (--profile)');
  const kvEvents = options.kvEvents === undefined ? undefined : await KvEventPublisher.start(options.kvEvents);
  const gpu =
    profile === undefined
      ? undefined
      : new GpuScheduler(profile, timeScale, (end) => metrics?.observe(end), kvEvents?.observer);
  if (gpu !== undefined) metrics = new VllmMetrics(gpu, log.stats, models[0]!);
  const context: SimContext = {
    models: new Set(models),
    defaults,
    log,
    faults: new FaultQueue(),
    timeScale,
    gpu,
    kvEvents,
  };
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const modelsJson = modelsBody(models, defaults.maxModelLen);

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = req.url ?? '/';
    const query = url.indexOf('?');
    const path = query < 0 ? url : url.slice(0, query);
    // Control calls and metric probes are not requests to the model: left out of the log and stats.
    const control = path.startsWith('/_sim/') || path === '/metrics';
    const record = control ? detachedRecord(req, path) : context.log.open(req.method ?? 'GET', path, req.headers);
    const exchange: Exchange = { req, res, record, closedByServer: false, onClose: undefined };
    res.on('error', () => undefined); // a write after the client left: the close handler accounts for it
    req.on('error', () => undefined);
    res.on('close', () => {
      exchange.onClose?.();
      if (!control) context.log.settle(record, res.writableFinished, !exchange.closedByServer);
    });
    route(context, exchange, path, maxBodyBytes, modelsJson, metrics).catch((error: unknown) => {
      if (res.headersSent || res.destroyed) return;
      if (error instanceof SimInputError) sendError(exchange, error.status, error.message, error.param);
      else sendError(exchange, 500, `internal sim error: ${(error as Error).message}`);
    });
  });
  server.keepAliveTimeout = 65_000;

  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  }).catch(async (error: unknown) => {
    await kvEvents?.close();
    throw error;
  });
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    host,
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    log: context.log,
    faults: context.faults,
    gpu,
    kvEvents: kvEvents?.endpoints,
    close: async () => {
      await new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      });
      await kvEvents?.close();
    },
  };
}
