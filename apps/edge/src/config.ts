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
  };
  /** Client API keys (`Authorization: Bearer` or `x-api-key`). Empty = no auth (a warning is logged). */
  apiKeys: string[];
  /** Agent join tokens. Empty = any agent may join (a warning is logged). */
  joinTokens: string[];
  /** Largest request body accepted, bytes (default 32 MiB, Anthropic's limit). */
  maxBodyBytes: number;
  /** How often agents send heartbeats, ms; an agent silent for 3 intervals is dropped. */
  heartbeatIntervalMs: number;
  /** How long an agent may take to open an assigned run's stream, ms. */
  runOpenTimeoutMs: number;
  /** Passed to agents: no first byte from the backend within this time fails the run, ms (0 = agent default). */
  firstByteTimeoutMs: number;
  /** Attempts on other agents when a run fails before its first byte (tunnel failures, 5xx). */
  maxAttempts: number;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** Stored Responses (`store: true`): embedded SQLite in `dataDir` (env IOP_DATA_DIR, default ./.iop-data), or memory. */
  responsesStore: { kind: 'sqlite' | 'memory'; dataDir?: string; maxAgeMs: number; maxRows: number };
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
  tunnel: { host: '127.0.0.1', port: 8081 },
  apiKeys: [],
  joinTokens: [],
  maxBodyBytes: 32 * 1024 * 1024,
  heartbeatIntervalMs: 5_000,
  runOpenTimeoutMs: 10_000,
  firstByteTimeoutMs: 0,
  maxAttempts: 3,
  logLevel: 'info',
  gate: DEFAULT_GATE,
  billingHeader: 'end',
  pool: parsePoolConfig({}),
  responsesStore: { kind: 'sqlite', maxAgeMs: 30 * 24 * 60 * 60 * 1000, maxRows: 100_000 },
  adminKeys: [],
  shutdownDeadlineMs: 10_000,
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
      },
    },
    apiKeys: { type: 'array', items: { type: 'string', minLength: 8 } },
    joinTokens: { type: 'array', items: { type: 'string', minLength: 8 } },
    maxBodyBytes: { type: 'integer', minimum: 1024, maximum: 1024 * 1024 * 1024 },
    heartbeatIntervalMs: { type: 'integer', minimum: 100, maximum: 600_000 },
    runOpenTimeoutMs: { type: 'integer', minimum: 100, maximum: 600_000 },
    firstByteTimeoutMs: { type: 'integer', minimum: 0, maximum: 3_600_000 },
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
      },
    },
    adminKeys: { type: 'array', items: { type: 'string', minLength: 16 } },
    shutdownDeadlineMs: { type: 'integer', minimum: 0, maximum: 3_600_000 },
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
  if (Object.keys(tunnel).length > 0) out.tunnel = tunnel;
  set(out, 'apiKeys', list(env.IOP_API_KEYS));
  set(out, 'joinTokens', list(env.IOP_JOIN_TOKENS));
  set(out, 'maxBodyBytes', int(env.IOP_MAX_BODY_BYTES));
  set(out, 'logLevel', env.IOP_LOG_LEVEL);
  set(out, 'adminKeys', list(env.IOP_ADMIN_KEYS));
  set(out, 'shutdownDeadlineMs', int(env.IOP_SHUTDOWN_DEADLINE_MS));
  if (env.IOP_DATA_DIR !== undefined && env.IOP_DATA_DIR !== '') out.responsesStore = { dataDir: env.IOP_DATA_DIR };
  return out;
}

function merge(base: EdgeConfig, override: Record<string, unknown>): Record<string, unknown> {
  const tunnel = { ...base.tunnel, ...((override.tunnel as object | undefined) ?? {}) };
  const gate = { ...base.gate, ...((override.gate as object | undefined) ?? {}) };
  const responsesStore = { ...base.responsesStore, ...((override.responsesStore as object | undefined) ?? {}) };
  return { ...base, ...override, tunnel, gate: { default: gate.default, models: gate.models ?? {} }, responsesStore };
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
  const shared = config.adminKeys.filter((key) => config.apiKeys.includes(key));
  if (shared.length > 0) throw new ConfigError('invalid edge config: /adminKeys must not repeat a client API key (/apiKeys)');
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
