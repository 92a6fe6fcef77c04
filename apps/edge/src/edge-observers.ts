/**
 * Read-outs the metrics take from the edge's parts: agent counts at scrape time (from the agent
 * registry and the pool's outlier states) and the pre-bound tunnel counters the Run handler bumps
 * (children bound once, so the per-frame cost is one increment).
 */
import type { AgentCounts, EdgeMetrics } from './metrics.js';
import type { PoolSnapshot } from './pool/pool-snapshot.js';
import type { AgentSession } from './tunnel/agent-session.js';

/** Agent counts: a connected agent is healthy unless draining or ejected / probing in some group. */
export function agentCounts(sessions: readonly AgentSession[], pool: PoolSnapshot): AgentCounts {
  const unhealthy = new Set<string>();
  for (const group of pool.groups)
    for (const provider of group.providers) if (provider.outlier.state !== 'healthy') unhealthy.add(provider.id);
  let draining = 0;
  let healthy = 0;
  for (const session of sessions) {
    if (session.draining) draining++;
    else if (!unhealthy.has(session.agentId)) healthy++;
  }
  return {
    connected: sessions.length,
    healthy,
    draining,
    agents: sessions.map((session) => ({
      agent: session.agentId,
      inFlight: session.inFlight,
      maxConcurrency: session.maxConcurrency,
      queued: session.load.queued + (session.load.backendWaiting ?? 0),
      kvCacheUsage: session.load.kvCacheUsage,
    })),
  };
}

/** Counters for the Run handler (tunnel/run-stream-handler.ts): plain numbers, read by the metrics at each scrape. */
export type TunnelCounters = EdgeMetrics['tunnelTally'];

export function tunnelFrameCounters(metrics: EdgeMetrics): TunnelCounters {
  return metrics.tunnelTally;
}
