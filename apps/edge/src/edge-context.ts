/** What the HTTP layer and the tunnel share: config, agent registry, runs, metrics, logger. */
import type { EdgeConfig } from './config.js';
import type { Logger } from './logger.js';
import type { EdgeMetrics } from './metrics.js';
import type { AgentRegistry } from './tunnel/agent-registry.js';
import type { RunRegistry } from './tunnel/run-registry.js';
import type { GateRegistry } from './gate/gate-registry.js';
import type { PoolSnapshot, ProviderPool } from './pool/provider-pool.js';
import type { SharedState } from './shared-state.js';
import type { InFlightRequests } from './telemetry/in-flight-requests.js';
import type { BodyBudget } from './limits/body-budget.js';

export interface EdgeContext {
  config: EdgeConfig;
  registry: AgentRegistry;
  runs: RunRegistry;
  metrics: EdgeMetrics;
  logger: Logger;
  gates: GateRegistry;
  /** Every provider (agents and direct providers) behind the model groups: routing, retries, queue. */
  pool: ProviderPool;
  /** The pool's state (groups, providers, outlier states, queue, retry budget) for the admin API. */
  poolSnapshot(): PoolSnapshot;
  /** A bounded metric label for a client's model name: its group, a served model, else "unknown". */
  knownModel(model: string): string;
  /** The inference requests being served now (`GET /admin/requests`). */
  requests: InFlightRequests;
  /**
   * Keys, limits, the usage ledger and the stores behind them (storage/shared-state.ts); absent in bare test contexts.
   */
  state?: SharedState;
  /** The edge-wide budget of request bytes in flight (`maxRequestBytesInFlight`); absent in bare test contexts. */
  bodyBudget?: BodyBudget;
}
