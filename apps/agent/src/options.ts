/**
 * Agent options: the settings of options-schema.ts resolved (defaults filled, checked, strings read as the flags'
 * values are) into `AgentOptions`, for the command and for programmatic callers (`startAgent`).
 */
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import { ConfigError, compileSchema, parseBindingValue, setPath, withSources } from '@iop/core';
import type { Backend, BackendKind, ServedApi } from './backends/backend.js';
import { AGENT_BINDINGS, AGENT_CONFIG_SCHEMA, type GpuOption } from './options-schema.js';

const checkSchema = compileSchema(AGENT_CONFIG_SCHEMA);

export interface AgentOptions {
  /** Edge tunnel URL (`http://` = h2c, `https://` = TLS); the first of `edgeUrls`. Default `http://127.0.0.1:8081`. */
  edgeUrl: string;
  /** Every edge to serve (`--edge a,b`): one Control session per edge, runs from any. */
  edgeUrls: string[];
  /** Shared secret of the edge's pool. Default empty. */
  joinToken: string;
  /** Default `<hostname>`. */
  agentId: string;
  /** Default `llamacpp` (embedded). */
  backend: BackendKind;
  /** `openai` backend: base URL of the OpenAI-compatible server (required). */
  backendUrl: string | undefined;
  /** `openai` backend: key sent as `Authorization: Bearer`. */
  backendApiKey: string | undefined;
  /** `openai` backend: served model names, skipping discovery. */
  models: string[] | undefined;
  /** `openai` backend: the APIs the server serves, skipping the probes (`OpenAiBackendOptions.apis`). */
  apis: ServedApi[] | undefined;
  /**
   * `llamacpp` backend: GGUF path or `hf:owner/repo/file.gguf`; default stories260K.gguf from the models search path.
   */
  model: string | undefined;
  /** `llamacpp` backend: CPU threads; default cores - 1 (at least 1, at most 32), leaving a core to the event loop. */
  threads: number | undefined;
  gpu: GpuOption;
  /** `llamacpp` backend: context size per sequence, tokens; default the model's training context (at most 8192). */
  contextSize: number | undefined;
  /** Runs at once. Default 4 for `llamacpp` (one sequence each), 16 for `openai`. */
  maxConcurrency: number;
  labels: Record<string, string>;
  /** Heartbeat period when the edge gives none, ms. Default 5 000. */
  heartbeatMs: number;
  /**
   * Default first-byte timeout of a run (the assignment may override), ms. Default 120 000 (a non-stream answer arrives
   * whole).
   */
  firstByteTimeoutMs: number;
  /** Longest gap between body slices from the backend, ms. Default 60 000. */
  idleTimeoutMs: number;
  /** PEM file of the CA that signs the edge's certificate (TLS). */
  tlsCa: string | undefined;
  logLevel: string;
  /** JSON lines or pino-pretty text; undefined: pretty on a terminal, JSON otherwise. */
  logFormat: 'json' | 'pretty' | undefined;
  /** llamacpp: directories searched first for the default model, colon-separated. */
  modelsPath: string | undefined;
  /** llamacpp: where downloaded models are kept. Default ~/.cache/iop/models. */
  modelCache: string | undefined;
  /** llamacpp: longest wait for the download host before a model download is given up, ms. Default 5 000. */
  downloadProbeTimeoutMs: number;
  /** SIGTERM / shutdown(): longest wait for in-flight runs, ms. Default 30 000. */
  shutdownDeadlineMs: number;
  /**
   * Old generation's limit after a full collection, percent over the live heap; 0 = V8's adaptive factor. Applied by
   * the `iop-agent` command at start (`applyHeapGrowth`, @iop/core). Default 30.
   */
  heapGrowthPercent: number;
  /** Reconnect backoff: first ceiling and cap, ms (full jitter). Defaults 250 and 10 000. */
  reconnectBaseMs: number;
  reconnectCapMs: number;
  /** Extra uniform random delay before reconnecting after a lost edge, ms (spreads reconnect storms). Default 1 000. */
  reconnectJitterMs: number;
  /** A connection registered for this long resets the backoff, ms. Default 10 000. */
  stableConnectionMs: number;
  /** HTTP/2 PING to the edge after this long without a frame from it, ms. Default 10 000. */
  edgePingIntervalMs: number;
  /** An unanswered PING closes the connection after this long, ms. Default 10 000. */
  edgePingTimeoutMs: number;
  /**
   * Port of the agent's /healthz, /readyz and /metrics (0 = any free port); undefined = none. The CLI's default is
   * 8082.
   */
  metricsPort: number | undefined;
  /** Listen address of that port. Default 127.0.0.1. */
  metricsHost: string;
  /**
   * False when the port is only a default: then a port in use is logged and the agent runs without it. Default true.
   */
  metricsPortRequired: boolean;
  /** The backend's KV-event stream (cache-aware routing); `endpoint` undefined = none. */
  kvEvents: KvEventsOptions;
  /** Programmatic use: a logger to use instead of a new pino logger on stdout. */
  logger?: Logger;
  /** Programmatic use: a ready backend (the agent closes it on close). */
  backendInstance?: Backend;
}

export interface KvEventsOptions {
  /** ZMQ endpoint of the backend's KV-event publisher; undefined = the agent does not follow events. */
  endpoint: string | undefined;
  /** ZMQ endpoint of the publisher's replay socket. */
  replayEndpoint: string | undefined;
  /** Topic filter; empty = every topic. */
  topic: string;
  /** Most blocks in the agent's index. Default 1 000 000. */
  maxBlocks: number;
  /** Most prefix keys mapped to blocks. Default 10 000. */
  maxPrefixes: number;
}

/** Options as given: numbers may be strings (CLI, env); everything optional. */
export type AgentOptionsInput = {
  [K in keyof AgentOptions]?: AgentOptions[K] extends number | undefined
    ? number | string
    : AgentOptions[K] extends KvEventsOptions
      ? Partial<Record<keyof KvEventsOptions, string | number>>
      : AgentOptions[K] | string;
};

/**
 * Fills defaults and validates.
 * @param sources where each setting came from (flag or variable), for the messages.
 * @throws ConfigError naming every problem (`invalid agent options: maxConcurrency must be <= 1024 (from
 * --max-concurrency)`).
 */
export function resolveAgentOptions(
  input: AgentOptionsInput,
  sources: ReadonlyArray<ReadonlyMap<string, string>> = [],
): AgentOptions {
  const problems: string[] = [];
  // Strings (CLI, env, programmatic callers) are read as the flags' values are.
  const raw: Record<string, unknown> = {};
  const given = { ...input } as Record<string, unknown>;
  if (given.edgeUrls === undefined && given.edgeUrl !== undefined) given.edgeUrls = given.edgeUrl;
  for (const binding of AGENT_BINDINGS) {
    let value = binding.path.length > 1 ? valueAt(given, binding.path) : given[binding.field];
    if (value === undefined || value === '' || (Array.isArray(value) && value.length === 0)) continue;
    if (binding.field === 'labels' && typeof value === 'object')
      value = Object.fromEntries(Object.entries(value as object).map(([key, label]) => [key, String(label)]));
    if (typeof value === 'string' && binding.kind !== 'string') {
      const parsed = parseBindingValue(binding, value, binding.flag);
      if ('problem' in parsed) {
        problems.push(parsed.problem);
        continue;
      }
      value = parsed.value;
    }
    setPath(raw, binding.path, value);
  }
  if (Array.isArray(raw.edgeUrls)) raw.edgeUrls = [...new Set(raw.edgeUrls as string[])];
  const { value, problems: schemaProblems } = checkSchema(raw);
  problems.push(...withSources(schemaProblems, sources));
  const backendInstance = typeof input.backendInstance === 'object' ? input.backendInstance : undefined;
  if (value.backend === 'openai' && backendInstance === undefined) {
    if (value.backendUrl === undefined) problems.push('backendUrl is required with backend openai (--backend-url)');
    else if (!isHttpUrl(value.backendUrl))
      problems.push(`backendUrl must be an http:// or https:// URL, got ${JSON.stringify(value.backendUrl)}`);
  }
  for (const [index, url] of (Array.isArray(value.edgeUrls) ? value.edgeUrls : []).entries()) {
    if (typeof url === 'string' && /^https?:\/\//.test(url) && !isHttpUrl(url))
      problems.push(`edgeUrls[${index}] must be an http:// or https:// URL, got ${JSON.stringify(url)}`);
  }
  if (problems.length > 0) throw new ConfigError(`invalid agent options: ${problems.join('; ')}`);
  const metricsPort = value.metricsPort === 'off' || value.metricsPort === 'none' ? undefined : value.metricsPort;
  return {
    edgeUrl: value.edgeUrls[0]!,
    edgeUrls: value.edgeUrls,
    joinToken: value.joinToken,
    agentId: value.agentId ?? hostname(),
    backend: value.backend,
    backendUrl: value.backendUrl,
    backendApiKey: value.backendApiKey,
    models: value.models === undefined || value.models.length === 0 ? undefined : value.models,
    apis: value.apis === undefined || value.apis.length === 0 ? undefined : value.apis,
    model: value.model,
    threads: value.threads,
    gpu: value.gpu,
    contextSize: value.contextSize,
    maxConcurrency: value.maxConcurrency ?? (value.backend === 'llamacpp' ? 4 : 16),
    labels: value.labels,
    heartbeatMs: value.heartbeatMs,
    firstByteTimeoutMs: value.firstByteTimeoutMs,
    idleTimeoutMs: value.idleTimeoutMs,
    tlsCa: value.tlsCa,
    logLevel: value.logLevel,
    logFormat: value.logFormat,
    modelsPath: value.modelsPath,
    modelCache: value.modelCache,
    downloadProbeTimeoutMs: value.downloadProbeTimeoutMs,
    shutdownDeadlineMs: value.shutdownDeadlineMs,
    heapGrowthPercent: value.heapGrowthPercent,
    reconnectBaseMs: value.reconnectBaseMs,
    reconnectCapMs: value.reconnectCapMs,
    reconnectJitterMs: value.reconnectJitterMs,
    stableConnectionMs: value.stableConnectionMs,
    edgePingIntervalMs: value.edgePingIntervalMs,
    edgePingTimeoutMs: value.edgePingTimeoutMs,
    metricsPort,
    metricsHost: value.metricsHost,
    kvEvents: { ...value.kvEvents, endpoint: value.kvEvents.endpoint, replayEndpoint: value.kvEvents.replayEndpoint },
    metricsPortRequired: input.metricsPortRequired !== false && input.metricsPortRequired !== 'false',
    logger: typeof input.logger === 'object' ? input.logger : undefined,
    backendInstance,
  };
}

/** The value at a nested path of a config object (undefined where a level is missing). */
function valueAt(source: Record<string, unknown>, path: readonly string[]): unknown {
  let node: unknown = source;
  for (const segment of path) {
    if (typeof node !== 'object' || node === null) return undefined;
    node = (node as Record<string, unknown>)[segment];
  }
  return node;
}

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}
