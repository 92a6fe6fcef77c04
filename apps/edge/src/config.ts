/**
 * Edge configuration: defaults < config file (JSON, `--config` / IOP_CONFIG) < environment <
 * command-line flags. Validated up front with ajv; an invalid config is refused with every problem
 * named (field and limit), never half applied.
 */
import { readFileSync } from 'node:fs';
import Ajv from 'ajv';
import { DEFAULT_GATE, type GateSection } from './gate/gate-registry.js';
import { parsePoolConfig, type PoolConfig } from './pool/pool-config.js';
import { ConfigError } from './config-error.js';
import { CONFIG_KEYS_SCHEMA, recordsOfConfigKeys, type ConfigKey } from './keys/config-keys.js';
import { DEFAULT_STORAGE, STORAGE_SCHEMA, mergeStorage, storageFromEnv, type StorageConfig } from './storage/storage-config.js';

export interface EdgeConfig {
  /** HTTP API listen address. */
  host: string;
  /** HTTP API port (0 = any free port). */
  port: number;
  tunnel: {
    host: string;
    /** gRPC tunnel port, HTTP/2 (h2c without TLS). 0 = any free port. */
    port: number;
    /** PEM files; when both are set the tunnel serves TLS. */
    tlsCertFile?: string;
    tlsKeyFile?: string;
    /** Bounds on connections that have not registered an agent yet (tunnel/connection-guard.ts). */
    unauthenticated: {
      /** A connection (and each Control stream) must register within this time, ms. Default 10,000. */
      registerTimeoutMs: number;
      /** Unauthenticated connections open at once; more are closed on arrival. Default 64. */
      maxUnauthenticatedConnections: number;
      /** Open streams per unauthenticated connection; more are refused (REFUSED_STREAM). Default 4. */
      maxUnauthenticatedStreams: number;
    };
  };
  /** Client API keys (`Authorization: Bearer` or `x-api-key`). Empty = no auth (a warning is logged). */
  apiKeys: string[];
  /**
   * Client API keys with policy (name, owner, allowed models, limits, budget, expiry): see
   * keys/config-keys.ts. Keys created through the admin API live in `storage.sql` instead.
   */
  keys: ConfigKey[];
  /** Where shared state lives (SQL: Responses, managed keys, ledger; counters): storage/storage-config.ts. */
  storage: StorageConfig;
  /** Agent join tokens. Empty = any agent may join (a warning is logged). */
  joinTokens: string[];
  /** Largest request body accepted, bytes (default 32 MiB, Anthropic's limit). */
  maxBodyBytes: number;
  /** How often agents send heartbeats, ms; an agent silent for 3 intervals is dropped. */
  heartbeatIntervalMs: number;
  /** Run accepted: longest wait for an agent to acknowledge an assigned run (its ACCEPTED frame), ms. Not retried on the same agent. */
  runAcceptedTimeoutMs: number;
  /**
   * Time to first byte of a streamed backend request, from ACCEPTED to the first body byte, ms
   * (also passed to the agent). A non-stream backend request's first byte is its whole answer:
   * it waits up to `requestDeadlineMs` instead. Not retried on the same provider. 0 = no edge
   * clock, the agent's own default (`--first-byte-timeout-ms`).
   */
  firstByteTimeoutMs: number;
  /** Longest silence of the backend between body slices, ms (enforced by the agent; time the client holds the stream back does not count). */
  idleTimeoutMs: number;
  /** Total time of a request across all its attempts and backoffs, ms: then 504 (in-band error once streaming), run cancelled. */
  requestDeadlineMs: number;
  /** Longest wait for a client that stopped reading to take more of a stream, ms: then the run is cancelled (backend slot released) and the response ends with an in-dialect error. */
  writeStallTimeoutMs: number;
  /** Attempts on other agents when a run fails before its first byte (tunnel failures, 5xx). */
  maxAttempts: number;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** Stored Responses (`store: true`): embedded SQLite in `dataDir` (env IOP_DATA_DIR, default ./.iop-data), or memory. */
  responsesStore: {
    kind: 'sqlite' | 'memory';
    dataDir?: string;
    maxAgeMs: number;
    maxRows: number;
    /** Largest stored record (input items, conversation, Response), bytes of its JSON; a request whose input alone exceeds it is refused with 413. Default 16 MiB. */
    maxResponseBytes: number;
    /** All stored records together, bytes; the oldest are removed beyond it. Default 2 GiB. */
    maxTotalBytes: number;
  };
  /** Stream gate per model: `default` plus `models.<name>` overrides (see packages/stream-gate/README.md). */
  gate: GateSection;
  /**
   * Claude Code's per-conversation billing line at the top of its system prompt: `end` (default)
   * moves it to the end of the system prompt so backends' prefix caches share the rest across
   * conversations, `drop` removes it, `keep` leaves it first.
   */
  billingHeader: 'end' | 'drop' | 'keep';
  /**
   * Admin API keys (`Authorization: Bearer` on `/admin/*`), distinct from client keys: never
   * accepted on `/v1`, and a key may not be both. Empty = the admin API refuses every call.
   */
  adminKeys: string[];
  /** Graceful shutdown (SIGTERM): longest wait for in-flight streams before they are ended with an error, ms. */
  shutdownDeadlineMs: number;
  /** After start, how long a model nothing serves yet is a 503 (agents reconnecting), not a 404, ms. */
  startupGraceMs: number;
  /**
   * Provider pool: model groups and aliases, direct providers, fallbacks, queue, retry, outlier
   * ejection and prefix affinity (see `pool/pool-config.ts`). Replaced whole by a later layer;
   * `pool.retry.maxAttempts` defaults to the top-level `maxAttempts`.
   */
  pool: PoolConfig;
}

export const DEFAULT_CONFIG: EdgeConfig = {
  host: '127.0.0.1',
  port: 8080,
  tunnel: { host: '127.0.0.1', port: 8081, unauthenticated: { registerTimeoutMs: 10_000, maxUnauthenticatedConnections: 64, maxUnauthenticatedStreams: 4 } },
  apiKeys: [],
  keys: [],
  storage: DEFAULT_STORAGE,
  joinTokens: [],
  maxBodyBytes: 32 * 1024 * 1024,
  heartbeatIntervalMs: 5_000,
  runAcceptedTimeoutMs: 5_000,
  firstByteTimeoutMs: 120_000,
  idleTimeoutMs: 60_000,
  requestDeadlineMs: 600_000,
  writeStallTimeoutMs: 30_000,
  maxAttempts: 3,
  logLevel: 'info',
  gate: DEFAULT_GATE,
  billingHeader: 'end',
  pool: parsePoolConfig({}),
  responsesStore: { kind: 'sqlite', maxAgeMs: 30 * 24 * 60 * 60 * 1000, maxRows: 100_000, maxResponseBytes: 16 * 1024 * 1024, maxTotalBytes: 2 * 1024 * 1024 * 1024 },
  adminKeys: [],
  shutdownDeadlineMs: 10_000,
  startupGraceMs: 15_000,
};

const schema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    host: { type: 'string', minLength: 1 },
    port: { type: 'integer', minimum: 0, maximum: 65535 },
    tunnel: {
      type: 'object',
      additionalProperties: false,
      properties: {
        host: { type: 'string', minLength: 1 },
        port: { type: 'integer', minimum: 0, maximum: 65535 },
        tlsCertFile: { type: 'string' },
        tlsKeyFile: { type: 'string' },
        unauthenticated: {
          type: 'object',
          additionalProperties: false,
          properties: {
            registerTimeoutMs: { type: 'integer', minimum: 100, maximum: 600_000 },
            maxUnauthenticatedConnections: { type: 'integer', minimum: 1, maximum: 100_000 },
            maxUnauthenticatedStreams: { type: 'integer', minimum: 1, maximum: 1_000 },
          },
        },
      },
    },
    apiKeys: { type: 'array', items: { type: 'string', minLength: 8 } },
    keys: CONFIG_KEYS_SCHEMA,
    storage: STORAGE_SCHEMA,
    joinTokens: { type: 'array', items: { type: 'string', minLength: 8 } },
    maxBodyBytes: { type: 'integer', minimum: 1024, maximum: 1024 * 1024 * 1024 },
    heartbeatIntervalMs: { type: 'integer', minimum: 100, maximum: 600_000 },
    runAcceptedTimeoutMs: { type: 'integer', minimum: 100, maximum: 600_000 },
    firstByteTimeoutMs: { type: 'integer', minimum: 0, maximum: 3_600_000 },
    idleTimeoutMs: { type: 'integer', minimum: 100, maximum: 3_600_000 },
    requestDeadlineMs: { type: 'integer', minimum: 100, maximum: 86_400_000 },
    writeStallTimeoutMs: { type: 'integer', minimum: 100, maximum: 3_600_000 },
    maxAttempts: { type: 'integer', minimum: 1, maximum: 10 },
    logLevel: { enum: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] },
    responsesStore: {
      type: 'object',
      additionalProperties: false,
      properties: {
        kind: { enum: ['sqlite', 'memory'] },
        dataDir: { type: 'string', minLength: 1 },
        maxAgeMs: { type: 'integer', minimum: 1000 },
        maxRows: { type: 'integer', minimum: 1 },
        maxResponseBytes: { type: 'integer', minimum: 1024 },
        maxTotalBytes: { type: 'integer', minimum: 1024 },
      },
    },
    adminKeys: { type: 'array', items: { type: 'string', minLength: 16 } },
    shutdownDeadlineMs: { type: 'integer', minimum: 0, maximum: 3_600_000 },
    startupGraceMs: { type: 'integer', minimum: 0, maximum: 3_600_000 },
    pool: { type: 'object' },
    billingHeader: { enum: ['end', 'drop', 'keep'] },
    gate: {
      type: 'object',
      additionalProperties: false,
      properties: {
        default: { type: 'object', required: ['filters'], properties: { filters: { type: 'array' } } },
        models: { type: 'object', additionalProperties: { type: 'object', required: ['filters'], properties: { filters: { type: 'array' } } } },
      },
    },
  },
} as const;

const validate = new Ajv({ allErrors: true }).compile(schema);

export { ConfigError };

const list = (value: string | undefined) => value?.split(',').map((item) => item.trim()).filter((item) => item.length > 0);
const int = (value: string | undefined) => (value === undefined || value === '' ? undefined : Number(value));

/** The attempt timeouts and their environment variables (flags: the same names in kebab case). */
export const TIMEOUT_ENV = [
  ['heartbeatIntervalMs', 'IOP_HEARTBEAT_INTERVAL_MS'],
  ['runAcceptedTimeoutMs', 'IOP_RUN_ACCEPTED_TIMEOUT_MS'],
  ['firstByteTimeoutMs', 'IOP_FIRST_BYTE_TIMEOUT_MS'],
  ['idleTimeoutMs', 'IOP_IDLE_TIMEOUT_MS'],
  ['requestDeadlineMs', 'IOP_REQUEST_DEADLINE_MS'],
  ['writeStallTimeoutMs', 'IOP_WRITE_STALL_TIMEOUT_MS'],
  ['startupGraceMs', 'IOP_STARTUP_GRACE_MS'],
] as const;

/** Reads the overrides the environment gives (IOP_*). */
export function configFromEnv(env: NodeJS.ProcessEnv): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const tunnel: Record<string, unknown> = {};
  const set = (target: Record<string, unknown>, key: string, value: unknown) => {
    if (value !== undefined) target[key] = value;
  };
  set(out, 'host', env.IOP_HOST);
  set(out, 'port', int(env.IOP_PORT));
  set(tunnel, 'host', env.IOP_TUNNEL_HOST);
  set(tunnel, 'port', int(env.IOP_TUNNEL_PORT));
  set(tunnel, 'tlsCertFile', env.IOP_TLS_CERT);
  set(tunnel, 'tlsKeyFile', env.IOP_TLS_KEY);
  const unauthenticated: Record<string, unknown> = {};
  set(unauthenticated, 'registerTimeoutMs', int(env.IOP_TUNNEL_REGISTER_TIMEOUT_MS));
  set(unauthenticated, 'maxUnauthenticatedConnections', int(env.IOP_TUNNEL_MAX_UNAUTHENTICATED_CONNECTIONS));
  set(unauthenticated, 'maxUnauthenticatedStreams', int(env.IOP_TUNNEL_MAX_UNAUTHENTICATED_STREAMS));
  if (Object.keys(unauthenticated).length > 0) tunnel.unauthenticated = unauthenticated;
  if (Object.keys(tunnel).length > 0) out.tunnel = tunnel;
  set(out, 'apiKeys', list(env.IOP_API_KEYS));
  set(out, 'joinTokens', list(env.IOP_JOIN_TOKENS));
  set(out, 'maxBodyBytes', int(env.IOP_MAX_BODY_BYTES));
  set(out, 'logLevel', env.IOP_LOG_LEVEL);
  set(out, 'adminKeys', list(env.IOP_ADMIN_KEYS));
  set(out, 'shutdownDeadlineMs', int(env.IOP_SHUTDOWN_DEADLINE_MS));
  for (const [key, name] of TIMEOUT_ENV) set(out, key, int(env[name]));
  const responsesStore: Record<string, unknown> = {};
  if (env.IOP_DATA_DIR !== undefined && env.IOP_DATA_DIR !== '') responsesStore.dataDir = env.IOP_DATA_DIR;
  set(responsesStore, 'maxResponseBytes', int(env.IOP_RESPONSES_MAX_RESPONSE_BYTES));
  set(responsesStore, 'maxTotalBytes', int(env.IOP_RESPONSES_MAX_TOTAL_BYTES));
  if (Object.keys(responsesStore).length > 0) out.responsesStore = responsesStore;
  set(out, 'storage', storageFromEnv(env));
  return out;
}

function merge(base: EdgeConfig, override: Record<string, unknown>): Record<string, unknown> {
  const tunnelOverride = (override.tunnel as { unauthenticated?: object } | undefined) ?? {};
  const tunnel = { ...base.tunnel, ...tunnelOverride, unauthenticated: { ...base.tunnel.unauthenticated, ...(tunnelOverride.unauthenticated ?? {}) } };
  const gate = { ...base.gate, ...((override.gate as object | undefined) ?? {}) };
  const responsesStore = { ...base.responsesStore, ...((override.responsesStore as object | undefined) ?? {}) };
  const storage = mergeStorage(base.storage, override.storage as Record<string, unknown> | undefined);
  return { ...base, ...override, tunnel, gate: { default: gate.default, models: gate.models ?? {} }, responsesStore, storage };
}

/**
 * Builds the effective config.
 * @param layers file contents, env overrides, flag overrides — later layers win.
 * @throws ConfigError naming every invalid field and its limit.
 */
export function resolveConfig(...layers: Array<Record<string, unknown>>): EdgeConfig {
  let merged: Record<string, unknown> = { ...DEFAULT_CONFIG };
  for (const layer of layers) merged = merge(merged as unknown as EdgeConfig, layer);
  if (!validate(merged)) {
    const problems = (validate.errors ?? []).map((error) => {
      const extra = (error.params as { additionalProperty?: string }).additionalProperty;
      return `${error.instancePath || '/'} ${error.message ?? 'is invalid'}${extra === undefined ? '' : ` (${extra})`}`;
    });
    // The pool section has its own schema and cross-checks: name its problems in the same pass.
    const pool = (merged as { pool?: unknown }).pool;
    if (typeof pool === 'object' && pool !== null && pool !== DEFAULT_CONFIG.pool) {
      try {
        parsePoolConfig(pool as Record<string, unknown>);
      } catch (error) {
        if (error instanceof ConfigError) problems.push(error.message.replace(/^invalid pool config: /, '').split('; ').map((problem) => `/pool${problem.startsWith('/') ? '' : ' '}${problem}`).join('; '));
      }
    }
    throw new ConfigError(`invalid edge config: ${problems.join('; ')}`);
  }
  const config = merged as unknown as EdgeConfig;
  if (config.responsesStore.maxResponseBytes > config.responsesStore.maxTotalBytes) {
    throw new ConfigError(`invalid edge config: /responsesStore/maxResponseBytes (${config.responsesStore.maxResponseBytes}) must not exceed /responsesStore/maxTotalBytes (${config.responsesStore.maxTotalBytes})`);
  }
  const shared = config.adminKeys.filter((key) => config.apiKeys.includes(key));
  if (shared.length > 0) throw new ConfigError('invalid edge config: /adminKeys must not repeat a client API key (/apiKeys)');
  recordsOfConfigKeys(config.keys); // repeated ids or keys, bad expiry times
  if (config.pool !== DEFAULT_CONFIG.pool) {
    const raw = config.pool as unknown as Record<string, unknown>;
    const retry = { maxAttempts: config.maxAttempts, ...((raw.retry as object | undefined) ?? {}) };
    config.pool = parsePoolConfig({ ...raw, retry });
  } else if (config.maxAttempts !== DEFAULT_CONFIG.maxAttempts) {
    config.pool = parsePoolConfig({ retry: { maxAttempts: config.maxAttempts } });
  }
  return config;
}

/** Reads a JSON config file. @throws ConfigError when it cannot be read or parsed. */
export function readConfigFile(path: string): Record<string, unknown> {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
  } catch (error) {
    throw new ConfigError(`cannot read config file ${path}: ${error instanceof Error ? error.message : String(error)}`);
  }
}
