/**
 * What the soak watches while it runs: each agent's in-flight count as the edge sees it, as the
 * agent reports it, and as its backend (the sim) sees it; heartbeat ages; and the RSS and open
 * file descriptors of the edge and the agents (/proc, Linux).
 */
import { readdirSync } from 'node:fs';
import { request } from 'undici';
import { procStats } from '../processes.js';

/** One connected agent session as the edge's admin API shows it. */
export interface AgentLoad {
  id: string;
  /** Runs the edge has assigned to this session and not seen finish. */
  edgeInFlight: number;
  /** In-flight runs the agent reported in its last heartbeat. */
  reportedInFlight: number;
  /** Unix ms of the last heartbeat. */
  lastHeartbeatAt: number;
}

/**
 * `GET /admin/agents` read into AgentLoad rows. The one place that knows the admin API's field
 * names (`load.inFlight`, `load.reportedInFlight`, `health.lastHeartbeatAt`).
 * @throws Error when the edge does not answer 200.
 */
/** The agent's own count is its runs for this edge (`load.agentInFlight`), or all edges' before its first heartbeat. */
export async function readAgentLoads(origin: string, adminKey: string): Promise<AgentLoad[]> {
  const response = await request(`${origin}/admin/agents`, {
    headers: { authorization: `Bearer ${adminKey}` },
    headersTimeout: 5_000,
    bodyTimeout: 5_000,
  });
  if (response.statusCode !== 200) {
    await response.body.dump();
    throw new Error(`GET /admin/agents: HTTP ${response.statusCode}`);
  }
  const body = (await response.body.json()) as {
    data: Array<{
      id: string;
      load: { inFlight: number; reportedInFlight: number; agentInFlight?: number | null };
      health: { lastHeartbeatAt: number };
    }>;
  };
  return body.data.map((agent) => ({
    id: agent.id,
    edgeInFlight: agent.load.inFlight,
    reportedInFlight: agent.load.agentInFlight ?? agent.load.reportedInFlight,
    lastHeartbeatAt: agent.health.lastHeartbeatAt,
  }));
}

/** A sim's view (`GET /_sim/stats`). */
export interface BackendLoad {
  /** Chat completion requests with an open connection. */
  inFlight: number;
  /** Requests the client (the agent) left before the end, cumulative. */
  aborted: number;
  running: number;
  waiting: number;
}

export async function readBackendLoad(simUrl: string): Promise<BackendLoad> {
  const response = await request(`${simUrl}/_sim/stats`, { headersTimeout: 5_000, bodyTimeout: 5_000 });
  const stats = (await response.body.json()) as {
    completionsInFlight: number;
    completionsAborted: number;
    gpu: { running: number; waiting: number } | null;
  };
  return {
    inFlight: stats.completionsInFlight,
    aborted: stats.completionsAborted,
    running: stats.gpu?.running ?? 0,
    waiting: stats.gpu?.waiting ?? 0,
  };
}

/** One agent's three in-flight counts at one instant. */
export interface InFlightSample {
  id: string;
  edge: number;
  reported: number;
  backend: number;
  /** The largest pairwise difference of the three. */
  disagreement: number;
  /** Backend requests with no edge run behind them: backend − edge, when positive. */
  orphans: number;
}

/**
 * Joins the edge's rows (summed over sessions of one id) with the sims' counts; agent `ids[i]`
 * runs in front of `backends[i]`. An agent the edge does not list counts 0 at the edge.
 */
export function joinInFlight(
  ids: readonly string[],
  loads: readonly AgentLoad[],
  backends: readonly BackendLoad[],
): InFlightSample[] {
  return ids.map((id, index) => {
    const sessions = loads.filter((load) => load.id === id);
    const edge = sessions.reduce((sum, load) => sum + load.edgeInFlight, 0);
    const reported = sessions.reduce((max, load) => Math.max(max, load.reportedInFlight), 0);
    const backend = backends[index]!.inFlight;
    const disagreement = Math.max(edge, reported, backend) - Math.min(edge, reported, backend);
    return { id, edge, reported, backend, disagreement, orphans: Math.max(0, backend - edge) };
  });
}

export interface ResourceSample {
  name: string;
  pid: number;
  rssMiB: number;
  fds: number;
}

/** RSS and open file descriptors (entries of /proc/<pid>/fd) of a live process. */
export function resources(name: string, pid: number): ResourceSample {
  let fds = Number.NaN;
  let rssMiB = Number.NaN;
  try {
    fds = readdirSync(`/proc/${pid}/fd`).length;
    rssMiB = procStats(pid).rssBytes / 2 ** 20;
  } catch {
    // the process is gone: NaN figures
  }
  return { name, pid, rssMiB, fds };
}
