/**
 * Agent options: one TypeBox schema (see @iop/core's config-schema.ts for the library and why)
 * gives the defaults, the validation (every problem at once, each named by its setting), the flags
 * and `IOP_*` variables (`AGENT_BINDINGS`, same naming rule and, for shared settings, the same
 * names as the edge's) and the published JSON Schema (`schema/iop-agent.schema.json`) of the
 * agent's config file (`--config`, JSON or YAML).
 */
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import { Type } from '@sinclair/typebox';
import {
  ConfigError,
  compileSchema,
  configBindings,
  HEAP_GROWTH_PERCENT_SCHEMA,
  parseBindingValue,
  publishedJsonSchema,
  setPath,
  stringEnum,
  withSources,
  type BindingAlias,
} from '@iop/core';
import { SERVED_APIS, type Backend, type BackendKind, type ServedApi } from './backends/backend.js';

export type GpuOption = 'auto' | 'none' | 'cuda' | 'vulkan' | 'metal';
const GPUS = ['auto', 'none', 'cuda', 'vulkan', 'metal'] as const satisfies readonly GpuOption[];
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
const LABEL_KEY = '^[A-Za-z0-9][A-Za-z0-9_.\\-/]{0,62}$';

const ms = (minimum: number, maximum: number, fallback: number, description: string) =>
  Type.Integer({ minimum, maximum, default: fallback, description });

/**
 * The settings of an agent, as its config file, flags and variables give them. Defaults that
 * depend on other settings or on the host (agent id, threads, max concurrency) are applied by
 * `resolveAgentOptions`.
 */
export const AGENT_CONFIG_SCHEMA = Type.Object(
  {
    edgeUrls: Type.Array(Type.String({ pattern: '^https?://' }), {
      minItems: 1,
      default: ['http://127.0.0.1:8081'],
      description: 'Edge tunnel URL(s) (http:// = h2c, https:// = TLS); several = one session per edge, runs from any.',
    }),
    joinToken: Type.String({ default: '', description: "Shared secret of the edge's agent pool." }),
    agentId: Type.Optional(Type.String({ minLength: 1, description: 'Agent id (default: the hostname).' })),
    backend: stringEnum(['openai', 'llamacpp'] as const, {
      default: 'llamacpp',
      description: 'openai (vLLM, SGLang, llama.cpp server, Ollama) or llamacpp (embedded).',
    }),
    backendUrl: Type.Optional(
      Type.String({
        minLength: 1,
        description: 'openai: base URL of the server, e.g. http://127.0.0.1:8000 (a trailing /v1 is dropped).',
      }),
    ),
    backendApiKey: Type.Optional(
      Type.String({ minLength: 1, description: 'openai: key sent to the server as Authorization: Bearer.' }),
    ),
    models: Type.Optional(
      Type.Array(Type.String({ minLength: 1 }), {
        description: 'openai: served model names (skips /v1/models discovery).',
      }),
    ),
    apis: Type.Optional(
      Type.Array(stringEnum(SERVED_APIS), {
        description:
          'openai: the APIs the server serves its models with (chat, completions, embeddings, rerank; skips probing them).',
      }),
    ),
    modelsPath: Type.Optional(
      Type.String({
        minLength: 1,
        description:
          'llamacpp: directories searched first for the default model, colon-separated like PATH (then ./models, ../shared/models).',
      }),
    ),
    modelCache: Type.Optional(
      Type.String({
        minLength: 1,
        description: 'llamacpp: directory of downloaded models (default ~/.cache/iop/models).',
      }),
    ),
    downloadProbeTimeoutMs: ms(
      100,
      600_000,
      5_000,
      "llamacpp: longest wait for the download host's answer before a model download is given up, ms.",
    ),
    model: Type.Optional(
      Type.String({
        minLength: 1,
        description:
          'llamacpp: GGUF file or hf:owner/repo/file.gguf (default: stories260K.gguf from the models search path).',
      }),
    ),
    threads: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 256,
        description: 'llamacpp: CPU threads (default: cores - 1, at most 32).',
      }),
    ),
    gpu: stringEnum(GPUS, { default: 'auto', description: 'llamacpp: auto, none, cuda, vulkan or metal.' }),
    contextSize: Type.Optional(
      Type.Integer({
        minimum: 16,
        maximum: 1_048_576,
        description: "llamacpp: context per sequence, tokens (default: the model's, at most 8192).",
      }),
    ),
    maxConcurrency: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 1024, description: 'Runs at once (default: 4 llamacpp, 16 openai).' }),
    ),
    labels: Type.Unsafe<Record<string, string>>({
      type: 'object',
      propertyNames: { pattern: LABEL_KEY },
      additionalProperties: { type: 'string' },
      default: {},
      description: 'Labels sent at registration; keys 1-63 characters of [A-Za-z0-9_.-/].',
    }),
    heartbeatMs: ms(100, 600_000, 5_000, 'Heartbeat period when the edge gives none, ms.'),
    firstByteTimeoutMs: ms(
      100,
      3_600_000,
      600_000,
      'Default first-byte timeout of a run, ms (a non-stream answer sends its first byte only when complete).',
    ),
    idleTimeoutMs: ms(100, 3_600_000, 60_000, 'Longest gap between backend body bytes, ms.'),
    tlsCa: Type.Optional(Type.String({ minLength: 1, description: "PEM CA for the edge's TLS certificate." })),
    logLevel: stringEnum(LOG_LEVELS, { default: 'info', description: 'Log level.' }),
    logFormat: Type.Optional(
      stringEnum(['json', 'pretty'] as const, {
        description: 'Log lines as JSON or pino-pretty text (default: pretty on a terminal, JSON otherwise).',
      }),
    ),
    shutdownDeadlineMs: ms(0, 3_600_000, 30_000, 'On SIGTERM, longest wait for in-flight runs, ms.'),
    heapGrowthPercent: HEAP_GROWTH_PERCENT_SCHEMA,
    reconnectBaseMs: ms(1, 60_000, 250, 'Reconnect backoff: first ceiling, ms (full jitter).'),
    reconnectCapMs: ms(1, 600_000, 10_000, 'Reconnect backoff: largest ceiling, ms.'),
    reconnectJitterMs: ms(0, 600_000, 1_000, 'Extra random delay before reconnecting to a lost edge, ms.'),
    stableConnectionMs: ms(0, 3_600_000, 10_000, 'A connection registered for this long resets the backoff, ms.'),
    edgePingIntervalMs: ms(
      1_000,
      3_600_000,
      10_000,
      'HTTP/2 PING to the edge after this long without a frame from it, ms: a silently dropped connection is found and redialled.',
    ),
    edgePingTimeoutMs: ms(
      100,
      600_000,
      10_000,
      'A PING unanswered for this long closes the connection to the edge (its runs fail, the agent redials), ms.',
    ),
    metricsPort: Type.Optional(
      Type.Unsafe<number | 'off' | 'none'>({
        if: { type: 'string' },
        then: { enum: ['off', 'none'] },
        else: { type: 'integer', minimum: 0, maximum: 65535 },
        description:
          'Port of /healthz, /readyz and /metrics, 0 = any free port, off = none (the command line defaults to 8082).',
      }),
    ),
    metricsHost: Type.String({ minLength: 1, default: '127.0.0.1', description: 'Listen address of metricsPort.' }),
    kvEvents: Type.Object(
      {
        endpoint: Type.Optional(
          Type.String({
            pattern: '^(tcp|ipc|inproc)://',
            description:
              "ZMQ endpoint of the backend's KV-event publisher (vLLM --kv-events-config endpoint, e.g. tcp://127.0.0.1:5557); set = cache-aware routing.",
          }),
        ),
        replayEndpoint: Type.Optional(
          Type.String({
            pattern: '^(tcp|ipc|inproc)://',
            description:
              "ZMQ endpoint of the publisher's replay socket (vLLM replay_endpoint): gaps are filled from it.",
          }),
        ),
        topic: Type.String({ default: '', description: 'KV-event topic to subscribe to (empty = every topic).' }),
        maxBlocks: Type.Integer({
          minimum: 1,
          maximum: 100_000_000,
          default: 1_000_000,
          description: "Most KV-cache blocks the agent's index holds (about 200 bytes each); the oldest go first.",
        }),
        maxPrefixes: Type.Integer({
          minimum: 1,
          maximum: 1_000_000,
          default: 10_000,
          description: "Most of the edge's prefix keys the agent maps to blocks (the least recently used go first).",
        }),
      },
      { default: {} },
    ),
  },
  { additionalProperties: false },
);

/** Names from before the naming rule, and the edge's name of the heartbeat period. */
export const AGENT_ALIASES: Record<string, readonly BindingAlias[]> = {
  edgeUrls: [{ flag: '--edge', env: 'IOP_EDGE_URL' }],
  heartbeatMs: [{ flag: '--heartbeat-interval-ms', env: 'IOP_HEARTBEAT_INTERVAL_MS' }],
};

/** Every agent setting's flag and environment variable (one table, derived from the schema). */
export const AGENT_BINDINGS = configBindings(AGENT_CONFIG_SCHEMA, AGENT_ALIASES);

/** `schema/iop-agent.schema.json`. */
export function agentJsonSchema(): Record<string, unknown> {
  return publishedJsonSchema(AGENT_CONFIG_SCHEMA, {
    id: 'iop-agent.schema.json',
    title: 'iop-agent config',
    description:
      'Config file of iop-agent (JSON or YAML; --config / IOP_AGENT_CONFIG). Each setting also has a flag (--a-b for aB) and an environment variable (IOP_A_B).',
  });
}

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
