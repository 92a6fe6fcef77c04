/** What the HTTP layer and the tunnel share: config, agent registry, runs, metrics, logger. */
import type { EdgeConfig } from './config.js';
import type { Logger } from './logger.js';
import type { EdgeMetrics } from './metrics.js';
import type { AgentRegistry } from './pool/agent-registry.js';
import type { RunRegistry } from './tunnel/run-registry.js';
import type { GateRegistry } from './gate/gate-registry.js';

export interface EdgeContext {
  config: EdgeConfig;
  registry: AgentRegistry;
  runs: RunRegistry;
  metrics: EdgeMetrics;
  logger: Logger;
  gates: GateRegistry;
  /**
   * Pool health per agent session (e.g. outlier ejections), keyed by session id, when the pool
   * provides it; the admin API shows it as each agent's `health.pool`. Optional.
   */
  poolSnapshot?: () => ReadonlyMap<string, unknown>;
}
