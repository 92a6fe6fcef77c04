/**
 * The edge config schema: one TypeBox schema (see @iop/core's config-schema.ts for the library and
 * why) from which come the defaults (`DEFAULT_CONFIG`), the validation (every problem at once, each
 * with its path), the flag and environment bindings (`EDGE_BINDINGS`: `--tunnel-port`,
 * `IOP_TUNNEL_PORT` for `tunnel.port`; older names kept as aliases) and the published JSON Schema
 * (`schema/iop-edge.schema.json`, `npm run generate:schema`). `EdgeConfig` (edge-config.ts) is checked
 * against it at compile time.
 */
import { Type, type Static } from '@sinclair/typebox';
import {
  configBindings,
  HEAP_GROWTH_PERCENT_SCHEMA,
  publishedJsonSchema,
  stringEnum,
  type Assert,
  type BindingAlias,
  type SameShape,
} from '@iop/core';
import { MODEL_GATE_CONFIG_SCHEMA } from '@iop/stream-gate';
import type { EdgeConfig } from './edge-config.js';
import { DEFAULT_GATE } from './gate/gate-registry.js';
import { CONFIG_KEYS_SCHEMA, type ConfigKey } from './keys/config-keys.js';
import { PRICING_SCHEMA } from './ledger/pricing.js';
import { POOL_SCHEMA } from './pool/pool-config.js';
import { STORAGE_SCHEMA } from './storage/storage-config.js';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export const LOG_FORMATS = ['json', 'pretty'] as const;

const port = (description: string, fallback: number) =>
  Type.Integer({ minimum: 0, maximum: 65535, default: fallback, description });
const ms = (minimum: number, maximum: number, fallback: number, description: string) =>
  Type.Integer({ minimum, maximum, default: fallback, description });
const secrets = (minLength: number, description: string) =>
  Type.Array(Type.String({ minLength }), { default: [], description });

const edgeConfigSchema = Type.Object(
  {
    host: Type.String({ minLength: 1, default: '127.0.0.1', description: 'HTTP API listen address.' }),
    port: port('HTTP API port (0 = any free port).', 8080),
    tunnel: Type.Object(
      {
        host: Type.String({ minLength: 1, default: '127.0.0.1', description: 'Tunnel listen address.' }),
        port: port('gRPC tunnel port for agents, HTTP/2 (h2c without TLS); 0 = any free port.', 8081),
        tlsCertFile: Type.Optional(
          Type.String({ description: 'PEM certificate: with tlsKeyFile the tunnel serves TLS.' }),
        ),
        tlsKeyFile: Type.Optional(Type.String({ description: 'PEM private key of tlsCertFile.' })),
        unauthenticated: Type.Object(
          {
            registerTimeoutMs: ms(
              100,
              600_000,
              10_000,
              'A tunnel connection (and each Control stream) must register an agent within this time, ms.',
            ),
            maxUnauthenticatedConnections: Type.Integer({
              minimum: 1,
              maximum: 100_000,
              default: 64,
              description: 'Tunnel connections not yet registered at once; more are closed on arrival.',
            }),
            maxUnauthenticatedStreams: Type.Integer({
              minimum: 1,
              maximum: 1_000,
              default: 4,
              description: 'Open streams per tunnel connection not yet registered (more are refused).',
            }),
          },
          { additionalProperties: false, default: {} },
        ),
      },
      { additionalProperties: false, default: {} },
    ),
    apiKeys: secrets(
      8,
      'Client API keys (Authorization: Bearer, x-api-key, or x-goog-api-key and ?key= on Gemini paths). Empty = no auth (a warning is logged).',
    ),
    keys: Type.Unsafe<ConfigKey[]>({
      ...CONFIG_KEYS_SCHEMA,
      default: [],
      description: 'Client API keys with policy (id, name, key or keyHash, owner, models, limits, budget, expiresAt).',
    }),
    storage: STORAGE_SCHEMA,
    joinTokens: secrets(8, 'Agent join tokens. Empty = any agent may join (a warning is logged).'),
    maxBodyBytes: Type.Integer({
      minimum: 1024,
      maximum: 1024 * 1024 * 1024,
      default: 32 * 1024 * 1024,
      description: 'Largest request body accepted, bytes.',
    }),
    maxRequestBytesInFlight: Type.Integer({
      minimum: 0,
      maximum: 64 * 1024 * 1024 * 1024,
      default: 64 * 1024 * 1024,
      description:
        'Request body bytes the edge holds at once; beyond it requests get 503 (Anthropic 529) with Retry-After. 0 = no budget; else at least maxBodyBytes. Default 64 MiB (an edge under 512 MiB resident).',
    }),
    bodyTimeoutMs: ms(
      0,
      3_600_000,
      30_000,
      'The whole request body must arrive within this long, ms: then 408 (0 = only Node’s requestTimeout).',
    ),
    heartbeatIntervalMs: ms(
      100,
      600_000,
      5_000,
      'Agents heartbeat this often; one silent for 3 intervals is dropped, ms.',
    ),
    runAcceptedTimeoutMs: ms(100, 600_000, 5_000, 'Longest wait for an agent to accept an assigned run, ms.'),
    firstByteTimeoutMs: ms(
      0,
      3_600_000,
      120_000,
      "Streamed backend requests: longest wait for the first body byte, ms (0 = the agent's own default).",
    ),
    idleTimeoutMs: ms(100, 3_600_000, 60_000, 'Longest backend silence between body slices, ms.'),
    requestDeadlineMs: ms(100, 86_400_000, 600_000, 'Total time of a request across attempts, ms.'),
    writeStallTimeoutMs: ms(100, 3_600_000, 30_000, 'Longest wait for a client that stopped reading, ms.'),
    maxAttempts: Type.Integer({
      minimum: 1,
      maximum: 10,
      default: 3,
      description:
        'Attempts on other agents when a run fails before its first byte (the default of pool.retry.maxAttempts).',
    }),
    logLevel: stringEnum(LOG_LEVELS, { default: 'info', description: 'Log level.' }),
    logFormat: Type.Optional(
      stringEnum(LOG_FORMATS, {
        description: 'Log lines as JSON or pino-pretty text (default: pretty on a terminal, JSON otherwise).',
      }),
    ),
    responsesStore: Type.Object(
      {
        kind: stringEnum(['sqlite', 'memory'] as const, {
          default: 'sqlite',
          description: 'Stored Responses: embedded SQLite in dataDir, or memory.',
        }),
        dataDir: Type.Optional(
          Type.String({
            minLength: 1,
            description: 'Directory of the Responses store and state.sqlite (default ./.iop-data).',
          }),
        ),
        maxAgeMs: Type.Integer({
          minimum: 1000,
          default: 30 * 24 * 60 * 60 * 1000,
          description: 'Stored Responses older than this are removed, ms.',
        }),
        maxRows: Type.Integer({ minimum: 1, default: 100_000, description: 'Stored Responses kept at most.' }),
        maxResponseBytes: Type.Integer({
          minimum: 1024,
          default: 16 * 1024 * 1024,
          description: 'Largest stored Response (input + output), bytes; a larger input is refused with 413.',
        }),
        maxTotalBytes: Type.Integer({
          minimum: 1024,
          default: 2 * 1024 * 1024 * 1024,
          description: 'Stored Responses in all, bytes; the oldest go first.',
        }),
      },
      { additionalProperties: false, default: {} },
    ),
    websocket: Type.Object(
      {
        enabled: Type.Boolean({
          default: true,
          description: 'Serve OpenAI Responses over a WebSocket on /v1/responses (false: the upgrade gets 426).',
        }),
        idleTimeoutMs: ms(
          1_000,
          86_400_000,
          600_000,
          'A WebSocket with no response running that receives nothing for this long is closed, ms.',
        ),
        pingIntervalMs: ms(
          0,
          3_600_000,
          30_000,
          'A WebSocket is pinged this often (proxies keep it open); one that has not answered by the next ping is terminated, ms (0 = no pings).',
        ),
        maxConnectionsPerKey: Type.Integer({
          minimum: 1,
          maximum: 100_000,
          default: 16,
          description: 'Open WebSockets per client key; more are refused with 429.',
        }),
        maxConnections: Type.Integer({
          minimum: 1,
          maximum: 1_000_000,
          default: 4_096,
          description: 'Open WebSockets on this edge; more are refused with 503.',
        }),
        maxMessageBytes: Type.Integer({
          minimum: 1024,
          default: 32 * 1024 * 1024,
          description:
            'Largest WebSocket message a client may send (a response.create), bytes; a larger one closes the connection (1009).',
        }),
      },
      { additionalProperties: false, default: {} },
    ),
    adminKeys: secrets(16, 'Admin API keys for /admin, distinct from client keys.'),
    consoleSessionTtlMs: ms(60_000, 7 * 86_400_000, 8 * 3_600_000, 'A web console login lasts this long, ms.'),
    shutdownDeadlineMs: ms(0, 3_600_000, 10_000, 'On SIGTERM, longest wait for in-flight streams, ms.'),
    heapGrowthPercent: HEAP_GROWTH_PERCENT_SCHEMA,
    startupGraceMs: ms(
      0,
      3_600_000,
      15_000,
      'After start, a model no agent serves yet is a 503 with Retry-After (agents reconnecting), not a 404, ms.',
    ),
    pool: POOL_SCHEMA,
    pricing: PRICING_SCHEMA,
    metrics: Type.Object(
      {
        keyLabels: Type.Object(
          {
            enabled: Type.Boolean({
              default: false,
              description:
                'Export iop_key_requests_total and iop_key_tokens_total, labelled by client key id (key="other" past the bound).',
            }),
            keys: Type.Array(Type.String({ minLength: 1 }), {
              default: [],
              description:
                'Key ids labelled by name, every other key "other"; empty = the first maxKeys key ids seen since start.',
            }),
            maxKeys: Type.Integer({
              minimum: 1,
              maximum: 1000,
              default: 20,
              description:
                'Without keys: how many key ids get their own label (the key label takes at most maxKeys + 1 values).',
            }),
          },
          { additionalProperties: false, default: {} },
        ),
      },
      { additionalProperties: false, default: {}, description: 'Prometheus metrics (/metrics). Needs a restart.' },
    ),
    billingHeader: stringEnum(['end', 'drop', 'keep'] as const, {
      default: 'end',
      description:
        "Claude Code's per-conversation billing line: moved to the end of the system prompt, dropped, or kept first.",
    }),
    gate: Type.Object(
      {
        default: Type.Unsafe<EdgeConfig['gate']['default']>({
          ...MODEL_GATE_CONFIG_SCHEMA,
          default: DEFAULT_GATE.default,
          description: 'The gate of every model without an entry in models.',
        }),
        models: Type.Record(Type.String(), MODEL_GATE_CONFIG_SCHEMA, {
          default: {},
          description: 'Per-model gate settings, by client-facing model name.',
        }),
      },
      {
        additionalProperties: false,
        default: {},
        description: 'Stream gate per model (see packages/stream-gate/README.md).',
      },
    ),
  },
  { additionalProperties: false },
);

const _shape: Assert<SameShape<Static<typeof edgeConfigSchema>, EdgeConfig>> = true;

/** The edge config schema, typed by the checked `EdgeConfig`. */
export const EDGE_CONFIG_SCHEMA = Type.Unsafe<EdgeConfig>(edgeConfigSchema);

/** Names from before the naming rule, still accepted. */
export const EDGE_ALIASES: Record<string, readonly BindingAlias[]> = {
  'tunnel.tlsCertFile': [{ flag: '--tls-cert', env: 'IOP_TLS_CERT' }],
  'tunnel.tlsKeyFile': [{ flag: '--tls-key', env: 'IOP_TLS_KEY' }],
  'tunnel.unauthenticated.registerTimeoutMs': [
    { flag: '--tunnel-register-timeout-ms', env: 'IOP_TUNNEL_REGISTER_TIMEOUT_MS' },
  ],
  'tunnel.unauthenticated.maxUnauthenticatedConnections': [
    { flag: '--tunnel-max-unauthenticated-connections', env: 'IOP_TUNNEL_MAX_UNAUTHENTICATED_CONNECTIONS' },
  ],
  'tunnel.unauthenticated.maxUnauthenticatedStreams': [
    { flag: '--tunnel-max-unauthenticated-streams', env: 'IOP_TUNNEL_MAX_UNAUTHENTICATED_STREAMS' },
  ],
  'responsesStore.dataDir': [{ flag: '--data-dir', env: 'IOP_DATA_DIR' }],
  'responsesStore.maxResponseBytes': [
    { flag: '--responses-max-response-bytes', env: 'IOP_RESPONSES_MAX_RESPONSE_BYTES' },
  ],
  'responsesStore.maxTotalBytes': [{ flag: '--responses-max-total-bytes', env: 'IOP_RESPONSES_MAX_TOTAL_BYTES' }],
  'storage.sql.url': [{ env: 'IOP_STORAGE_POSTGRES_URL', implies: { 'storage.sql.kind': 'postgres' } }],
  'storage.sql.schema': [{ env: 'IOP_STORAGE_POSTGRES_SCHEMA' }],
  'storage.counters.url': [{ env: 'IOP_STORAGE_REDIS_URL', implies: { 'storage.counters.kind': 'redis' } }],
  'storage.counters.keyPrefix': [{ env: 'IOP_STORAGE_REDIS_PREFIX' }],
};

/** Every edge setting's flag and environment variable (one table, derived from the schema). */
export const EDGE_BINDINGS = configBindings(EDGE_CONFIG_SCHEMA, EDGE_ALIASES);

/** `schema/iop-edge.schema.json`. */
export function edgeJsonSchema(): Record<string, unknown> {
  return publishedJsonSchema(EDGE_CONFIG_SCHEMA, {
    id: 'iop-edge.schema.json',
    title: 'iop-edge config',
    description:
      'Config file of iop-edge (JSON or YAML; --config / IOP_CONFIG). Each setting also has a flag (--a-b-c for a.b.c) and an environment variable (IOP_A_B_C).',
  });
}
