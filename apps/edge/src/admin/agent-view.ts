/**
 * The admin view of one connected agent session (`GET /admin/agents`). Times are Unix ms, loads
 * are counts of requests, `kvCacheUsage` is in [0, 1] (null when the backend does not expose it).
 */
import type { AgentSession } from '../tunnel/agent-session.js';
import { sessionTag } from '@iop/proto';

export interface AgentView {
  id: string;
  /** Prefix keys the agent reports resident in its backend's KV cache (cache-aware routing; 0 without KV events). */
  residentPrefixes: number;
  /** Their cached tokens summed (a key's count includes the prefixes it shares with others). */
  residentTokens: number;
  /** The session's id as logs show it (a prefix: the whole id is the agent's Run credential). */
  session: string;
  models: Array<{ id: string; contextLength: number | null }>;
  load: {
    /** Runs the edge has assigned to it and not seen finish. */
    inFlight: number;
    /** Runs in flight as the agent last reported (all edges it serves). */
    reportedInFlight: number;
    /** Runs the agent holds for this edge, as its last heartbeat reported (null before the first). */
    agentInFlight: number | null;
    /** The agent's open backend HTTP requests (all edges), as its last heartbeat reported (null before the first). */
    backendInFlight: number | null;
    queued: number;
    kvCacheUsage: number | null;
    backendWaiting: number | null;
  };
  maxConcurrency: number;
  labels: Record<string, string>;
  health: {
    /** `ok` while heartbeats arrive on time; `late` after two missed intervals (dropped after three). */
    status: 'ok' | 'late';
    lastHeartbeatAt: number;
    /** Age of the last heartbeat when the view was built, ms. */
    heartbeatAgeMs: number;
    /**
     * Outlier state in each model group the agent serves (from the pool's snapshot); null when it has served none yet.
     */
    pool: unknown;
  };
  version: string;
  backend: string;
  drain: { draining: boolean; deregistering: boolean };
  connectedSince: number;
  runsServed: number;
}

export function agentView(
  session: AgentSession,
  heartbeatIntervalMs: number,
  pool: ReadonlyMap<string, unknown> | undefined,
  now = Date.now(),
  residency: { prefixes: number; tokens: number } = { prefixes: 0, tokens: 0 },
): AgentView {
  return {
    id: session.agentId,
    session: sessionTag(session.sessionId),
    models: session.models.map((model) => ({ id: model.id, contextLength: model.contextLength || null })),
    load: {
      inFlight: session.inFlight,
      reportedInFlight: session.load.reportedInFlight,
      agentInFlight: session.load.sessionInFlight ?? null,
      backendInFlight: session.load.backendInFlight ?? null,
      queued: session.load.queued,
      kvCacheUsage: session.load.kvCacheUsage ?? null,
      backendWaiting: session.load.backendWaiting ?? null,
    },
    maxConcurrency: session.maxConcurrency,
    labels: { ...session.labels },
    health: {
      status: now - session.lastHeartbeatAt > 2 * heartbeatIntervalMs ? 'late' : 'ok',
      lastHeartbeatAt: session.lastHeartbeatAt,
      heartbeatAgeMs: Math.max(0, now - session.lastHeartbeatAt),
      pool: pool?.get(session.agentId) ?? null,
    },
    version: session.agentVersion,
    backend: session.backend,
    drain: { draining: session.draining, deregistering: session.deregistering },
    connectedSince: session.connectedAt,
    runsServed: session.totalRuns,
    residentPrefixes: residency.prefixes,
    residentTokens: residency.tokens,
  };
}
