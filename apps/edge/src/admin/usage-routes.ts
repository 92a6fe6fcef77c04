/**
 * `GET /admin/usage` (behind admin keys): usage-ledger sums.
 * Query: `group_by` — comma-separated `key`, `model`, `served_model`, `agent`, `dialect`,
 * `status`, `day` (none: one total row); `from`, `to` — RFC 3339 times or ms since the epoch
 * (`from` inclusive, `to` exclusive; default all time); `key` — one key id.
 * `?flush=true` first writes this edge's queued rows (tests, end-of-day reports).
 * → `{object:'list', data:[{<groups>, requests, input_tokens, output_tokens, cached_tokens,
 * reasoning_tokens, errors, estimated_requests, cost_usd}], ledger:{queued, dropped, written}}`
 * (the counts are this edge's; `estimated_requests`: rows whose tokens the edge estimated;
 * `cost_usd`: the rows' cost at the price table when each was settled, US dollars, a number;
 * without `group_by` the one row is the total).
 */
import type { Express, Request, Response } from 'express';
import { IopError } from '@iop/core';
import type { EdgeContext } from '../edge-context.js';
import { GROUPS, queryUsage, type UsageGroup } from '../ledger/usage-query.js';

function timeParam(req: Request, name: string): number | undefined {
  const value = req.query[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string')
    throw new IopError('invalid_request', `\`${name}\` must be one value`, { param: name });
  const ms = /^\d+$/.test(value) ? Number(value) : Date.parse(value);
  if (!Number.isFinite(ms))
    throw new IopError(
      'invalid_request',
      `\`${name}\` must be an RFC 3339 time or ms since the epoch, got ${JSON.stringify(value)}`,
      { param: name },
    );
  return ms;
}

function groupsParam(req: Request): UsageGroup[] {
  const value = req.query.group_by;
  if (value === undefined || value === '') return [];
  if (typeof value !== 'string')
    throw new IopError('invalid_request', '`group_by` must be one comma-separated value', { param: 'group_by' });
  const groups = value.split(',').map((part) => part.trim());
  // Own keys only: `in` would also accept Object.prototype's names (`__proto__`, `toString`).
  const unknown = groups.filter((group) => !Object.hasOwn(GROUPS, group));
  if (unknown.length > 0)
    throw new IopError(
      'invalid_request',
      `unknown group_by ${unknown.map((group) => JSON.stringify(group)).join(', ')}; use ${Object.keys(GROUPS).join(', ')}`,
      { param: 'group_by' },
    );
  return [...new Set(groups)] as UsageGroup[];
}

export function mountUsageRoutes(app: Express, edge: EdgeContext): void {
  app.get('/admin/usage', async (req: Request, res: Response) => {
    const state = edge.state;
    if (state === undefined) throw new IopError('not_found', 'this edge has no usage ledger');
    const groupBy = groupsParam(req);
    const fromMs = timeParam(req, 'from');
    const toMs = timeParam(req, 'to');
    const key = typeof req.query.key === 'string' ? req.query.key : undefined;
    if (req.query.flush === 'true') await state.ledger.flush();
    const data = await queryUsage(state.sql, {
      groupBy,
      ...(fromMs === undefined ? {} : { fromMs }),
      ...(toMs === undefined ? {} : { toMs }),
      ...(key === undefined ? {} : { keyId: key }),
    });
    res.json({
      object: 'list',
      data,
      ledger: { queued: state.ledger.queued, dropped: state.ledger.dropped, written: state.ledger.written },
    });
  });
}
