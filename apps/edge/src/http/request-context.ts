/**
 * Per-request context: the request id (the client's `x-request-id` when it is a sane token,
 * otherwise a new `req_…`), echoed in the `x-request-id` response header, and a child logger that
 * stamps it on every line. The same id travels to the agent in the RunAssignment.
 */
import type { NextFunction, Request, Response } from 'express';
import { newId, type RequestTarget } from '@iop/core';
import type { Logger } from '../logger.js';
import type { KeyIdentity } from '../keys/key-directory.js';

const SANE_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export interface RequestLocals {
  requestId: string;
  log: Logger;
  startedAt: number;
  /**
   * Who owns what this request stores (Responses): set by the API key check (`keyCheck`, http/key-check.ts) on every
   * `/v1` request — the SHA-256 (hex) of the presented client key, `''` when the edge has no keys.
   * Undefined before that middleware ran.
   */
  owner?: string;
  /** The client key and its policy (limits, ledger): set by `keyCheck` (http/key-check.ts). */
  identity?: KeyIdentity;
  /** The dialect endpoint the request matched, with its path parameters and query (http/route-table.ts). */
  target?: RequestTarget;
}

export function locals(res: Response): RequestLocals {
  return res.locals as RequestLocals;
}

export function requestContext(logger: Logger) {
  return function requestContextMiddleware(req: Request, res: Response, next: NextFunction): void {
    const given = req.headers['x-request-id'];
    const requestId = typeof given === 'string' && SANE_ID.test(given) ? given : newId('req_');
    res.setHeader('x-request-id', requestId);
    const context: RequestLocals = { requestId, log: logger.child({ requestId }), startedAt: performance.now() };
    Object.assign(res.locals, context);
    next();
  };
}
