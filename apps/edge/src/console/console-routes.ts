/**
 * The web console (`/console`): the single-page app built by `@iop/console` (apps/console/dist),
 * and its session endpoints. The app itself reads and changes state through the admin API
 * (`/admin/*`) with its session cookie (admin/admin-auth.ts).
 * - `POST /console/api/login` `{key}` (JSON) → 200 `{object:'console_session', csrf_token,
 *   expires_at}` and the HttpOnly session cookie; 401 for a key that is not an admin key, 403 from
 *   another origin.
 * - `GET /console/api/session` → the same body while the cookie's session lives, else 401.
 * - `POST /console/api/logout` (session cookie and `x-csrf-token`) → 204; the session ends.
 * - `GET /console/…` → the app's files: `index.html` revalidated on every load, `assets/*`
 *   (content-hashed names) cached for a year.
 * Every response under `/console` carries a strict Content-Security-Policy (no inline script or
 * style, nothing from another origin, no framing) and `nosniff`.
 */
import fs from 'node:fs';
import path from 'node:path';
import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import { IopError, secretIn } from '@iop/core';
import type { EdgeContext } from '../edge-context.js';
import { checkSameOrigin, clearSessionCookie, namesThisEdge, sessionOf, setSessionCookie } from './console-auth.js';
import type { ConsoleSession, ConsoleSessions } from './console-sessions.js';

/** CSP Level 3 (https://www.w3.org/TR/CSP3/): only this origin's files; no inline code, no plugins, no framing. */
export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/** The built app's folder (apps/console/dist), or undefined when `@iop/console` is not installed. */
export function consoleDistDir(): string | undefined {
  try {
    return path.join(path.dirname(require.resolve('@iop/console/package.json')), 'dist');
  } catch {
    return undefined;
  }
}

function sessionBody(session: ConsoleSession): Record<string, unknown> {
  return {
    object: 'console_session',
    csrf_token: session.csrfToken,
    expires_at: new Date(session.expiresAt).toISOString(),
  };
}

function securityHeaders(_req: Request, res: Response, next: NextFunction): void {
  res.setHeader('content-security-policy', CONSOLE_CSP);
  res.setHeader('x-content-type-options', 'nosniff');
  res.setHeader('x-frame-options', 'DENY');
  res.setHeader('referrer-policy', 'same-origin');
  res.setHeader('cross-origin-opener-policy', 'same-origin');
  next();
}

/** A login from another origin is refused: it could sign a victim's browser into someone else's session. */
function checkLoginOrigin(req: Request): void {
  const origin = req.get('origin');
  if (origin === undefined) return; // not a browser's fetch: a script holding the key anyway
  if (!namesThisEdge(req, origin))
    throw new IopError('permission', 'cross-origin login refused: the Origin header does not name this edge');
}

export function mountConsole(
  app: Express,
  edge: EdgeContext,
  sessions: ConsoleSessions,
  distDir = consoleDistDir(),
): void {
  const json = express.json({ limit: '4kb' });
  app.use('/console', securityHeaders);
  app.post('/console/api/login', json, (req: Request, res: Response) => {
    checkLoginOrigin(req);
    const keys = edge.config.adminKeys;
    if (keys.length === 0)
      throw new IopError(
        'authentication',
        'the console is disabled: no admin keys configured (adminKeys / IOP_ADMIN_KEYS)',
      );
    const given = (req.body as { key?: unknown } | undefined)?.key;
    if (typeof given !== 'string' || given === '')
      throw new IopError('invalid_request', 'send `{"key": "<admin key>"}`', { param: 'key' });
    if (!secretIn(given, keys)) {
      edge.logger.warn({ ip: req.ip }, 'console: login refused (not an admin key)');
      throw new IopError('authentication', 'invalid admin key');
    }
    const session = sessions.open(given);
    setSessionCookie(req, res, session);
    res.setHeader('cache-control', 'no-store');
    edge.logger.info({ ip: req.ip, sessions: sessions.size }, 'console: login');
    res.json(sessionBody(session));
  });
  app.get('/console/api/session', (req: Request, res: Response) => {
    const session = sessionOf(req, sessions, edge.config.adminKeys);
    if (session === undefined) throw new IopError('authentication', 'no console session: log in with an admin key');
    res.setHeader('cache-control', 'no-store');
    res.json(sessionBody(session));
  });
  app.post('/console/api/logout', (req: Request, res: Response) => {
    const session = sessionOf(req, sessions, edge.config.adminKeys);
    if (session === undefined) throw new IopError('authentication', 'no console session');
    checkSameOrigin(req, session);
    sessions.close(session.id);
    clearSessionCookie(req, res);
    res.status(204).end();
  });
  // Express matches `/console/` here too (non-strict routing): only the bare path is redirected.
  app.get('/console', (req: Request, res: Response, next: NextFunction) =>
    req.path === '/console' ? res.redirect(301, '/console/') : next(),
  );
  if (distDir === undefined || !fs.existsSync(path.join(distDir, 'index.html'))) {
    app.get('/console/', () => {
      throw new IopError(
        'not_found',
        'the console is not built: run `npm run build` (it builds apps/console into apps/console/dist)',
      );
    });
    return;
  }
  app.use(
    '/console',
    express.static(distDir, {
      index: 'index.html',
      redirect: false,
      fallthrough: true,
      setHeaders(res, file) {
        const hashed = path.basename(path.dirname(file)) === 'assets';
        res.setHeader('cache-control', hashed ? 'public, max-age=31536000, immutable' : 'no-cache');
      },
    }),
  );
}
