/**
 * Edge configuration: defaults < config file (JSON or YAML, `--config` / IOP_CONFIG) < environment
 * (`IOP_*`) < command-line flags. Layers merge field by field (objects key by key; a list is
 * replaced whole). The schema (config-schema.ts) gives the defaults, the checks and the names of
 * the flags and variables; an invalid config is refused with every problem named by its path
 * (`gate.models.qwen3.filters[0]`), never half applied.
 */
import {
  ConfigError,
  compileSchema,
  layerFromEnv,
  layerFromFlags,
  mergeConfigLayers,
  readConfigFile,
  withSources,
  type ConfigLayer,
} from '@iop/core';
import { gateConfigProblems } from '@iop/stream-gate';
import type { GateSection } from './gate/gate-registry.js';
import { poolConfigProblems, type PoolConfig } from './pool/pool-config.js';
import { recordsOfConfigKeys, type ConfigKey } from './keys/config-keys.js';
import type { StorageConfig } from './storage/storage-config.js';
import type { PricingConfig } from './ledger/pricing.js';
import type { KeyLabelsConfig } from './telemetry/key-labels.js';
import { EDGE_BINDINGS, EDGE_CONFIG_SCHEMA } from './config-schema.js';

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
  /**
   * Client API keys (`Authorization: Bearer`, `x-api-key`, or `x-goog-api-key` and `?key=` on Gemini paths). Empty = no
   * auth (a warning is logged).
   */
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
  /**
   * The edge-wide budget of request body bytes held at once (http/body-budget.ts): a request
   * whose body would exceed it gets 503 (Anthropic 529) with `Retry-After`, decided from its
   * `Content-Length` before the body is read. 0 = no budget. Default 64 MiB, two bodies at the
   * 32 MiB limit: a body costs the edge several times its size while it is held (the bytes, their
   * text for JSON.parse, the parsed object, the backend's copy, garbage not yet collected), and
   * the refused ones are read and dropped meanwhile. Measured with 20 concurrent 30 MB requests
   * (test/integration/edge-body-budget.test.ts): peak resident 307 MiB at 64 MiB, 552 MiB at
   * 128 MiB, so the default keeps an edge under 512 MiB, the smallest memory limit it is deployed
   * with. Must be 0 or at least `maxBodyBytes`.
   */
  maxRequestBytesInFlight: number;
  /**
   * The whole request body must arrive within this long of the edge starting to read it (after
   * the headers and the key check), ms: then 408 in the client's dialect and the connection is
   * closed. Default 30 s: a body at the 32 MiB limit needs ~9 Mbit/s to make it, a typical
   * request (well under 1 MB) a few hundred kbit/s, while a stalled client holds a connection
   * and its partial body for 30 s instead of Node's 120 s `requestTimeout`.
   */
  bodyTimeoutMs: number;
  /** How often agents send heartbeats, ms; an agent silent for 3 intervals is dropped. */
  heartbeatIntervalMs: number;
  /**
   * Run accepted: longest wait for an agent to acknowledge an assigned run (its ACCEPTED frame), ms. Not retried on the
   * same agent.
   */
  runAcceptedTimeoutMs: number;
  /**
   * Time to first byte of a streamed backend request, from ACCEPTED to the first body byte, ms
   * (also passed to the agent). A non-stream backend request's first byte is its whole answer:
   * it waits up to `requestDeadlineMs` instead. Not retried on the same provider. 0 = no edge
   * clock, the agent's own default (`--first-byte-timeout-ms`).
   */
  firstByteTimeoutMs: number;
  /**
   * Longest silence of the backend between body slices, ms (enforced by the agent; time the client holds the stream
   * back does not count).
   */
  idleTimeoutMs: number;
  /**
   * Total time of a request across all its attempts and backoffs, ms: then 504 (in-band error once streaming), run
   * cancelled.
   */
  requestDeadlineMs: number;
  /**
   * Longest wait for a client that stopped reading to take more of a stream, ms: then the run is cancelled (backend
   * slot released) and the response ends with an in-dialect error.
   */
  writeStallTimeoutMs: number;
  /** Attempts on other agents when a run fails before its first byte (tunnel failures, 5xx). */
  maxAttempts: number;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** JSON lines or pino-pretty text; default pretty on a terminal, JSON otherwise. */
  logFormat?: 'json' | 'pretty';
  /**
   * Stored Responses (`store: true`): embedded SQLite in `dataDir` (env IOP_DATA_DIR, default ./.iop-data), or memory.
   */
  responsesStore: {
    kind: 'sqlite' | 'memory';
    dataDir?: string;
    maxAgeMs: number;
    maxRows: number;
    /**
     * Largest stored record (input items, conversation, Response), bytes of its JSON; a request whose input alone
     * exceeds it is refused with 413. Default 16 MiB.
     */
    maxResponseBytes: number;
    /** All stored records together, bytes; the oldest are removed beyond it. Default 2 GiB. */
    maxTotalBytes: number;
  };
  /**
   * OpenAI Responses over a WebSocket on `/v1/responses` (responses-socket/): connections, limits
   * and timeouts. A refused upgrade is an HTTP error before switching protocols.
   */
  websocket: {
    /** Serve the upgrade; false answers it with 426, which Codex CLI takes as "use HTTP". */
    enabled: boolean;
    /** A connection with no response running that receives nothing for this long is closed (1000), ms. */
    idleTimeoutMs: number;
    /**
     * A ping this often keeps proxies from cutting a quiet connection; one not answered by the next is a dead peer,
     * terminated (0 = none), ms.
     */
    pingIntervalMs: number;
    /** Open connections per client key; one more is refused with 429. */
    maxConnectionsPerKey: number;
    /** Open connections on this edge; one more is refused with 503. */
    maxConnections: number;
    /** Largest client message, bytes; a larger one closes the connection with 1009. */
    maxMessageBytes: number;
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
  /** A web console login (`/console`) lasts this long from the login, ms. Default 8 h. */
  consoleSessionTtlMs: number;
  /** Graceful shutdown (SIGTERM): longest wait for in-flight streams before they are ended with an error, ms. */
  shutdownDeadlineMs: number;
  /**
   * Old generation's limit after a full collection, percent over the live heap; 0 = V8's adaptive factor. Applied at
   * start (`applyHeapGrowth`, @iop/core). Default 30.
   */
  heapGrowthPercent: number;
  /** After start, how long a model nothing serves yet is a 503 (agents reconnecting), not a 404, ms. */
  startupGraceMs: number;
  /**
   * Provider pool: model groups and aliases, direct providers, fallbacks, queue, retry, outlier
   * ejection and prefix affinity (see `pool/pool-config.ts`). Replaced whole by a later layer;
   * `pool.retry.maxAttempts` defaults to the top-level `maxAttempts`.
   */
  pool: PoolConfig;
  /**
   * Price table per model, USD per million tokens: the ledger's cost and money budgets (ledger/pricing.ts). Reloadable.
   */
  pricing: PricingConfig;
  /**
   * Prometheus metrics: opt-in per-key series with a bounded `key` label (telemetry/key-labels.ts). Needs a restart.
   */
  metrics: { keyLabels: KeyLabelsConfig };
}

const checkSchema = compileSchema(EDGE_CONFIG_SCHEMA);

/** Every default (from the schema). */
export const DEFAULT_CONFIG: EdgeConfig = checkSchema({}).value;

export { ConfigError, readConfigFile };

/** Where each value of a layer built from the environment or the flags came from, and what could not be read. */
const layerInfo = new WeakMap<object, ConfigLayer>();

function register(layer: ConfigLayer): Record<string, unknown> {
  layerInfo.set(layer.values, layer);
  return layer.values;
}

/** The settings the environment gives (`IOP_*` by the naming rule, and the older names). */
export function configFromEnv(env: NodeJS.ProcessEnv): Record<string, unknown> {
  return register(layerFromEnv(EDGE_BINDINGS, env));
}

/** The settings the flags give: `flags` maps each flag given (`--tunnel-port`, aliases too) to its value. */
export function configFromFlags(flags: ReadonlyMap<string, string | undefined>): Record<string, unknown> {
  return register(layerFromFlags(EDGE_BINDINGS, flags));
}

/** What the schema cannot check: relations between fields, the pool's references, filter options, keys. */
function crossCheck(config: EdgeConfig, schemaProblems: readonly string[]): string[] {
  const problems: string[] = [];
  const clean = (path: string) => !schemaProblems.some((problem) => problem.startsWith(path));
  if (clean('responsesStore') && config.responsesStore.maxResponseBytes > config.responsesStore.maxTotalBytes) {
    problems.push(
      `responsesStore.maxResponseBytes (${config.responsesStore.maxResponseBytes}) must not exceed responsesStore.maxTotalBytes (${config.responsesStore.maxTotalBytes})`,
    );
  }
  if (
    clean('maxRequestBytesInFlight') &&
    clean('maxBodyBytes') &&
    config.maxRequestBytesInFlight > 0 &&
    config.maxRequestBytesInFlight < config.maxBodyBytes
  ) {
    problems.push(
      `maxRequestBytesInFlight (${config.maxRequestBytesInFlight}) must be 0 (no budget) or at least maxBodyBytes (${config.maxBodyBytes}): a body at the limit could never be read`,
    );
  }
  if (clean('adminKeys') && clean('apiKeys') && config.adminKeys.some((key) => config.apiKeys.includes(key)))
    problems.push('adminKeys must not repeat a client API key (apiKeys)');
  if (clean('keys')) {
    try {
      recordsOfConfigKeys(config.keys); // repeated ids or keys, bad expiry times
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      problems.push(error.message.replace(/^invalid edge config: /, ''));
    }
  }
  if (clean('pool')) problems.push(...poolConfigProblems(config.pool, 'pool').problems);
  if (clean('gate.default')) problems.push(...gateConfigProblems(config.gate.default, 'gate.default'));
  for (const [model, gate] of Object.entries(config.gate.models)) {
    const path = `gate.models${/^[A-Za-z_$][A-Za-z0-9_$-]*$/.test(model) ? `.${model}` : `[${JSON.stringify(model)}]`}`;
    if (clean(path)) problems.push(...gateConfigProblems(gate, path));
  }
  return problems;
}

/**
 * Builds the effective config.
 * @param layers file contents, env overrides, flag overrides — later layers win, field by field.
 * @throws ConfigError naming every problem (path and limit) in one message.
 */
export function resolveConfig(...layers: Array<Record<string, unknown>>): EdgeConfig {
  const merged = mergeConfigLayers(...layers);
  // pool.retry.maxAttempts follows the top-level maxAttempts unless the pool section sets it.
  const pool = merged.pool as { retry?: { maxAttempts?: unknown } } | undefined;
  if (
    merged.maxAttempts !== undefined &&
    (typeof pool !== 'object' || pool === null || pool.retry?.maxAttempts === undefined)
  ) {
    merged.pool = mergeConfigLayers(
      typeof pool === 'object' && pool !== null ? (pool as Record<string, unknown>) : {},
      {
        retry: { maxAttempts: merged.maxAttempts },
      },
    );
  }
  const readProblems = layers.flatMap((layer) => layerInfo.get(layer)?.problems ?? []);
  const { value, problems } = checkSchema(merged);
  const all = [
    ...readProblems,
    ...withSources(
      problems,
      layers.map((layer) => layerInfo.get(layer)?.sources),
    ),
  ];
  try {
    all.push(...crossCheck(value, problems));
  } catch {
    // A section the schema refused can break a cross-check: its schema problems are reported.
  }
  if (all.length > 0) throw new ConfigError(`invalid edge config: ${all.join('; ')}`);
  return value;
}
