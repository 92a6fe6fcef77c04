/**
 * The agent's settings as one TypeBox schema (see @iop/core's config-schema.ts for the library and why): it gives the
 * defaults, the validation (every problem at once, each named by its setting), the flags and `IOP_*` variables
 * (`AGENT_BINDINGS`, same naming rule and, for shared settings, the same names as the edge's) and the published JSON
 * Schema (`schema/iop-agent.schema.json`) of the agent's config file (`--config`, JSON or YAML). options.ts resolves
 * them into `AgentOptions`.
 */
import { Type } from '@sinclair/typebox';
import {
  configBindings,
  HEAP_GROWTH_PERCENT_SCHEMA,
  publishedJsonSchema,
  stringEnum,
  type BindingAlias,
} from '@iop/core';
import { SERVED_APIS } from './backends/backend.js';

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
