/**
 * Admin API authentication: `Authorization: Bearer <admin key>` against the config's `adminKeys`,
 * read on every request (config reload). Admin keys are a separate set from client API keys
 * (config validation refuses a key in both), so a client key never opens `/admin` and an admin key
 * never opens `/v1`. With no admin keys configured every admin call is refused.
 *
 * A request without an `Authorization` header may instead carry a web console session cookie
 * (console/console-auth.ts): its state-changing calls need the session's CSRF token and this
 * edge's origin as well.
 */
import type { NextFunction, Request, Response } from 'express';
import { IopError, secretIn } from '@iop/core';
import { checkSameOrigin, sessionOf } from '../console/console-auth.js';
import type { ConsoleSessions } from '../console/console-sessions.js';

/**
 * @returns express middleware; failures are `authentication` IopErrors (401), and `permission` (403) for a console call
 * failing its CSRF checks.
 */
export function adminAuth(keys: () => readonly string[], sessions?: ConsoleSessions) {
  return function adminAuthMiddleware(req: Request, _res: Response, next: NextFunction): void {
    const configured = keys();
    if (configured.length === 0)
      return next(
        new IopError(
          'authentication',
          'the admin API is disabled: no admin keys configured (adminKeys / IOP_ADMIN_KEYS)',
        ),
      );
    if (req.headers.authorization === undefined && sessions !== undefined) {
      const session = sessionOf(req, sessions, configured);
      if (session !== undefined) {
        try {
          checkSameOrigin(req, session);
        } catch (error) {
          return next(error);
        }
        return next();
      }
    }
    const match = /^Bearer\s+(.+)$/i.exec(req.headers.authorization ?? '');
    const given = match?.[1]?.trim();
    if (given === undefined || given === '')
      return next(new IopError('authentication', 'missing admin key: send `Authorization: Bearer <admin key>`'));
    if (!secretIn(given, configured)) return next(new IopError('authentication', 'invalid admin key'));
    next();
  };
}
