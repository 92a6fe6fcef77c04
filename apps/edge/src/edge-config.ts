/**
 * The edge's configuration, as checked and defaulted (config-schema.ts is its schema; config.ts reads the layers). Its
 * own module so that the schema and the loader both depend on it, not on each other.
 */
import type { GateSection } from './gate/gate-registry.js';
import type { PoolConfig } from './pool/pool-config.js';
import type { ConfigKey } from './keys/config-keys.js';
import type { StorageConfig } from './storage/storage-config.js';
import type { PricingConfig } from './ledger/pricing.js';
import type { KeyLabelsConfig } from './telemetry/key-labels.js';

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
