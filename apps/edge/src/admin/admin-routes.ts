/**
 * The admin API, mounted under `/admin` behind admin keys (see admin-auth.ts):
 * - `GET /admin/agents` → `{ object: 'list', data: AgentView[] }`, every connected session.
 * - `POST /admin/agents/{id}/drain[?deregister=true]` → the edge stops routing to the agent at
 *   once and sends it `Drain` (proto/iop/v1/tunnel.proto): it finishes its in-flight runs and, with
 *   `deregister`, closes its Control stream afterwards (it leaves the pool only then).
 * - `POST /admin/agents/{id}/undrain` → takes runs again.
 * - `GET /admin/requests` → `{ object: 'list', data: InFlightRequest[] }` (http/in-flight-requests.ts),
 *   the inference requests this edge serves now, oldest first, each with `ageMs` and `phase`.
 * - keys (`/admin/keys…`, key-routes.ts) and usage (`/admin/usage`, usage-routes.ts).
 * Callers authenticate with an admin key, or a web console session (admin-auth.ts).
 * `{id}` is an agent id (every session of that agent) or a session id. 404 when none matches;
 * 400 when `deregister` is not `true` or `false`.
 */
import type { Express, Request, Response } from 'express';
import { IopError } from '@iop/core';
import type { EdgeContext } from '../edge-context.js';
import type { PoolProviderSnapshot, PoolSnapshot } from '../pool/pool-snapshot.js';
import type { AgentSession } from '../tunnel/agent-session.js';
import { adminAuth } from './admin-auth.js';
import { agentView } from './agent-view.js';
import { sessionTag } from '@iop/proto';
import { mountKeyRoutes } from './key-routes.js';
import { mountUsageRoutes } from './usage-routes.js';
import type { ConsoleSessions } from '../console/console-sessions.js';

function sessionsNamed(edge: EdgeContext, id: string): AgentSession[] {
  const sessions = edge.registry.all().filter((session) => session.agentId === id);
  if (sessions.length === 0) throw new IopError('not_found', `no connected agent \`${id}\``);
  return sessions;
}

function deregisterParam(req: Request): boolean {
  const value = req.query.deregister;
  if (value === undefined || value === 'false') return false;
  if (value === 'true') return true;
  throw new IopError('invalid_request', 'query parameter `deregister` must be `true` or `false`', {
    param: 'deregister',
  });
}

/** Each agent's outlier state per model group, keyed by agent id (an agent provider's id). */
function poolHealthByAgent(
  snapshot: PoolSnapshot,
): Map<string, Array<{ group: string; outlier: PoolProviderSnapshot['outlier'] }>> {
  const byAgent = new Map<string, Array<{ group: string; outlier: PoolProviderSnapshot['outlier'] }>>();
  for (const group of snapshot.groups) {
    for (const provider of group.providers) {
      if (provider.kind !== 'agent') continue;
      const list = byAgent.get(provider.id) ?? [];
      list.push({ group: group.name, outlier: provider.outlier });
      byAgent.set(provider.id, list);
    }
  }
  return byAgent;
}

/** @param sessions the web console's sessions, accepted in place of an admin key (absent: admin keys only). */
export function mountAdmin(app: Express, edge: EdgeContext, sessions?: ConsoleSessions): void {
  const views = (sessions: readonly AgentSession[]) => {
    const pool = poolHealthByAgent(edge.poolSnapshot());
    const now = Date.now();
    return sessions.map((session) =>
      agentView(session, edge.config.heartbeatIntervalMs, pool, now, {
        prefixes: edge.pool.residency.sizeOf(session.sessionId),
        tokens: edge.pool.residency.tokensOf(session.sessionId),
      }),
    );
  };
  app.use(
    '/admin',
    adminAuth(() => edge.config.adminKeys, sessions),
  );
  app.get('/admin/pool', (_req: Request, res: Response) => {
    res.json(edge.poolSnapshot());
  });
  app.get('/admin/requests', (_req: Request, res: Response) => {
    res.json({ object: 'list', data: edge.requests.list() });
  });
  app.get('/admin/agents', (_req: Request, res: Response) => {
    res.json({ object: 'list', data: views(edge.registry.all()) });
  });
  app.post('/admin/agents/:id/drain', (req: Request, res: Response) => {
    const deregister = deregisterParam(req);
    const sessions = sessionsNamed(edge, String(req.params.id));
    for (const session of sessions) session.drain(true, deregister);
    edge.logger.info(
      { agentId: req.params.id, sessions: sessions.map((session) => sessionTag(session.sessionId)), deregister },
      'admin: agent draining',
    );
    res.json({ object: 'list', data: views(sessions) });
  });
  app.post('/admin/agents/:id/undrain', (req: Request, res: Response) => {
    const sessions = sessionsNamed(edge, String(req.params.id));
    for (const session of sessions) session.drain(false);
    edge.logger.info(
      { agentId: req.params.id, sessions: sessions.map((session) => sessionTag(session.sessionId)) },
      'admin: agent undrained',
    );
    res.json({ object: 'list', data: views(sessions) });
  });
  mountKeyRoutes(app, edge);
  mountUsageRoutes(app, edge);
}
