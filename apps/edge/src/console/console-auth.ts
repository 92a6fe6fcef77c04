/**
 * How a browser's console session authenticates an admin API call (`/admin/*` and the console's
 * own logout): the session cookie, and for every state-changing method (anything but GET, HEAD,
 * OPTIONS) the session's CSRF token in `x-csrf-token` and an `Origin` (or, without one, a
 * `Referer`) naming this edge's own host. The cookie is `SameSite=Strict` as well, so a cross-site
 * page can neither send it nor read the token (OWASP CSRF Prevention Cheat Sheet: synchronizer
 * token, SameSite cookies, verifying the origin with standard headers).
 */
import type { Request, Response } from 'express';
import { parse } from 'cookie';
import { IopError } from '@iop/core';
import { sameToken, type ConsoleSession, type ConsoleSessions } from './console-sessions.js';

/** The session cookie's name. */
export const SESSION_COOKIE = 'iop_console';
/** The request header carrying the session's CSRF token. */
export const CSRF_HEADER = 'x-csrf-token';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The session of the request's cookie, or undefined. */
export function sessionOf(
  req: Request,
  sessions: ConsoleSessions,
  adminKeys: readonly string[],
): ConsoleSession | undefined {
  const header = req.headers.cookie;
  if (header === undefined) return undefined;
  return sessions.get(parse(header)[SESSION_COOKIE], adminKeys);
}

/** The host an `Origin` or `Referer` value names, or undefined when it is not a URL. */
function hostOf(value: string): string | undefined {
  try {
    return new URL(value).host;
  } catch {
    return undefined;
  }
}

/**
 * Refuses a state-changing call of a cookie session that lacks the CSRF token or comes from
 * another origin.
 * @throws IopError `permission` (403).
 */
export function checkSameOrigin(req: Request, session: ConsoleSession): void {
  if (SAFE_METHODS.has(req.method)) return;
  const token = req.get(CSRF_HEADER);
  if (token === undefined || !sameToken(token, session.csrfToken))
    throw new IopError(
      'permission',
      `missing or wrong ${CSRF_HEADER} header: the console sends the token its session was given`,
    );
  const source = req.get('origin') ?? req.get('referer');
  if (source === undefined || !namesThisEdge(req, source))
    throw new IopError('permission', 'cross-origin request refused: the Origin header does not name this edge');
}

/**
 * True when `origin` (an `Origin` or `Referer` value) names the host the browser addressed: the
 * `Host` header, or the `X-Forwarded-Host` of a proxy that rewrites `Host`. (A cross-site page
 * cannot add `X-Forwarded-Host` to a request without a CORS preflight, which the edge never grants.)
 */
export function namesThisEdge(req: Request, origin: string): boolean {
  const host = hostOf(origin);
  if (host === undefined) return false;
  const forwarded = (req.get('x-forwarded-host') ?? '').split(',').map((value) => value.trim());
  return host === req.get('host') || forwarded.includes(host);
}

/**
 * True when the browser reached the edge over TLS (directly, or through a proxy that says so): the cookie is then
 * `Secure`.
 */
function overTls(req: Request): boolean {
  return req.secure || req.get('x-forwarded-proto') === 'https' || (req.get('origin') ?? '').startsWith('https:');
}

/**
 * Sets the session cookie: HttpOnly, SameSite=Strict, Path=/ (the console and `/admin`), Secure over TLS, expiring with
 * the session.
 */
export function setSessionCookie(req: Request, res: Response, session: ConsoleSession): void {
  res.cookie(SESSION_COOKIE, session.id, {
    httpOnly: true,
    sameSite: 'strict',
    secure: overTls(req),
    path: '/',
    expires: new Date(session.expiresAt),
  });
}

export function clearSessionCookie(req: Request, res: Response): void {
  res.clearCookie(SESSION_COOKIE, { httpOnly: true, sameSite: 'strict', secure: overTls(req), path: '/' });
}
