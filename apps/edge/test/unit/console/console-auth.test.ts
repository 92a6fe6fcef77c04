/**
 * The console's login and its session on the admin API, over real HTTP (express on loopback):
 * cookie attributes, the CSRF token and Origin checks on state-changing calls, expiry, logout,
 * an admin key removed by a reload ending its sessions, and the admin key header unchanged.
 */
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import express from 'express';
import pino from 'pino';
import { adminAuth } from '../../../src/admin/admin-auth.js';
import { CONSOLE_CSP, mountConsole } from '../../../src/console/console-routes.js';
import { ConsoleSessions } from '../../../src/console/console-sessions.js';
import { chatDialect } from '../../../src/dialects.js';
import type { EdgeContext } from '../../../src/edge-context.js';
import { errorHandler } from '../../../src/http/error-handler.js';
import { requestContext } from '../../../src/http/request-context.js';

const ADMIN_KEY = 'admin-key-unit-0000000001';
const OTHER_ADMIN_KEY = 'admin-key-unit-0000000002';

let server: http.Server;
let base: string;
let now = 1_000_000;
const config = { adminKeys: [ADMIN_KEY, OTHER_ADMIN_KEY], consoleSessionTtlMs: 60_000 };
const sessions = new ConsoleSessions(
  () => config.consoleSessionTtlMs,
  1000,
  () => now,
);

beforeAll(async () => {
  const logger = pino({ level: 'silent' });
  const edge = { config, logger } as unknown as EdgeContext;
  const app = express();
  app.use(requestContext(logger));
  mountConsole(app, edge, sessions, path.join(os.tmpdir(), 'iop-console-not-built'));
  app.use(
    '/admin',
    adminAuth(() => config.adminKeys, sessions),
  );
  app.get('/admin/thing', (_req, res) => void res.json({ ok: true }));
  app.post('/admin/thing', (_req, res) => void res.json({ changed: true }));
  app.use(errorHandler(() => chatDialect));
  server = http.createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

async function login(
  key: string,
  headers: Record<string, string> = { origin: base },
): Promise<{ status: number; cookie: string; csrf: string; setCookie: string }> {
  const response = await fetch(`${base}/console/api/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ key }),
  });
  const setCookie = response.headers.get('set-cookie') ?? '';
  const body = (await response.json()) as { csrf_token?: string };
  return { status: response.status, cookie: setCookie.split(';')[0] ?? '', csrf: body.csrf_token ?? '', setCookie };
}

const thing = (method: string, headers: Record<string, string>) =>
  fetch(`${base}/admin/thing`, { method, headers }).then((response) => response.status);

describe('console login', () => {
  it('sets an HttpOnly, SameSite=Strict session cookie that is not the key, with a CSRF token, under the console CSP', async () => {
    const response = await fetch(`${base}/console/api/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: base },
      body: JSON.stringify({ key: ADMIN_KEY }),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-security-policy')).toBe(CONSOLE_CSP);
    expect(response.headers.get('cache-control')).toBe('no-store');
    const cookie = response.headers.get('set-cookie')!;
    expect(cookie).toMatch(/^iop_console=[A-Za-z0-9_-]{43}; Path=\/; Expires=[^;]+; HttpOnly; SameSite=Strict$/);
    expect(cookie).not.toContain(ADMIN_KEY);
    const body = (await response.json()) as Record<string, string>;
    expect(body.object).toBe('console_session');
    expect(body.csrf_token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(Date.parse(body.expires_at!)).toBe(now + 60_000);
  });

  it('marks the cookie Secure when the browser came over TLS (a proxy in front says so)', async () => {
    expect((await login(ADMIN_KEY, { 'x-forwarded-proto': 'https' })).setCookie).toContain('; Secure');
    const proxied = await login(ADMIN_KEY, {
      origin: 'https://console.example',
      'x-forwarded-host': 'console.example',
    });
    expect([proxied.status, proxied.setCookie.includes('; Secure')]).toEqual([200, true]);
    expect((await login(ADMIN_KEY)).setCookie).not.toContain('Secure');
  });

  it('refuses a wrong key (401), a missing one (400) and a login from another origin (403)', async () => {
    expect((await login('not-an-admin-key-000000')).status).toBe(401);
    expect((await login('')).status).toBe(400);
    expect((await login(ADMIN_KEY, { origin: 'https://evil.example' })).status).toBe(403);
  });
});

describe('a console session on the admin API', () => {
  it('reads with the cookie alone; changes only with the CSRF token and this origin', async () => {
    const { cookie, csrf } = await login(ADMIN_KEY);
    expect(await thing('GET', { cookie })).toBe(200);
    expect(await thing('POST', { cookie, origin: base })).toBe(403); // no token
    expect(await thing('POST', { cookie, origin: base, 'x-csrf-token': 'x'.repeat(43) })).toBe(403); // wrong token
    expect(await thing('POST', { cookie, 'x-csrf-token': csrf })).toBe(403); // no Origin or Referer
    expect(await thing('POST', { cookie, origin: 'https://evil.example', 'x-csrf-token': csrf })).toBe(403);
    expect(await thing('POST', { cookie, origin: base, 'x-csrf-token': csrf })).toBe(200);
    expect(await thing('POST', { cookie, referer: `${base}/console/`, 'x-csrf-token': csrf })).toBe(200);
    // Behind a proxy that rewrites Host: the browser's host is in X-Forwarded-Host.
    const proxied = { cookie, origin: 'https://console.example', 'x-csrf-token': csrf };
    expect(await thing('POST', proxied)).toBe(403);
    expect(await thing('POST', { ...proxied, 'x-forwarded-host': 'console.example' })).toBe(200);
    expect(await thing('POST', { cookie, origin: 'not a url', 'x-csrf-token': csrf })).toBe(403);
    // Another session's token is not this one's.
    const other = await login(ADMIN_KEY);
    expect(await thing('POST', { cookie, origin: base, 'x-csrf-token': other.csrf })).toBe(403);
  });

  it('leaves the admin key header as it was: the key opens, anything else is a 401', async () => {
    expect(await thing('POST', { authorization: `Bearer ${ADMIN_KEY}` })).toBe(200);
    expect(await thing('GET', { authorization: 'Bearer nope-nope-nope-nope' })).toBe(401);
    expect(await thing('GET', {})).toBe(401);
    // A header that is there wins over a cookie: a wrong key is refused even with a live session.
    const { cookie } = await login(ADMIN_KEY);
    expect(await thing('GET', { cookie, authorization: 'Bearer nope-nope-nope-nope' })).toBe(401);
  });

  it('expires with its lifetime', async () => {
    const { cookie } = await login(ADMIN_KEY);
    now += 59_999;
    expect(await thing('GET', { cookie })).toBe(200);
    now += 1;
    expect(await thing('GET', { cookie })).toBe(401);
    expect((await fetch(`${base}/console/api/session`, { headers: { cookie } })).status).toBe(401);
  });

  it('ends with logout (which itself needs the token)', async () => {
    const { cookie, csrf } = await login(ADMIN_KEY);
    const session = await fetch(`${base}/console/api/session`, { headers: { cookie } });
    expect(session.status).toBe(200);
    expect(((await session.json()) as { csrf_token: string }).csrf_token).toBe(csrf);
    expect(
      (await fetch(`${base}/console/api/logout`, { method: 'POST', headers: { cookie, origin: base } })).status,
    ).toBe(403);
    const out = await fetch(`${base}/console/api/logout`, {
      method: 'POST',
      headers: { cookie, origin: base, 'x-csrf-token': csrf },
    });
    expect(out.status).toBe(204);
    expect(out.headers.get('set-cookie')).toMatch(
      /^iop_console=; Path=\/; Expires=Thu, 01 Jan 1970 00:00:00 GMT; HttpOnly; SameSite=Strict$/,
    );
    expect(await thing('GET', { cookie })).toBe(401);
  });

  it('ends when its admin key leaves adminKeys (config reload); sessions of the other key live on', async () => {
    const first = await login(ADMIN_KEY);
    const second = await login(OTHER_ADMIN_KEY);
    config.adminKeys = [OTHER_ADMIN_KEY];
    try {
      expect(await thing('GET', { cookie: first.cookie })).toBe(401);
      expect(await thing('GET', { cookie: second.cookie })).toBe(200);
    } finally {
      config.adminKeys = [ADMIN_KEY, OTHER_ADMIN_KEY];
    }
    expect(await thing('GET', { cookie: first.cookie })).toBe(401); // removed, not merely hidden
  });
});

describe('ConsoleSessions', () => {
  it('keeps at most maxSessions, ending the oldest', () => {
    const few = new ConsoleSessions(() => 60_000, 2);
    const a = few.open(ADMIN_KEY);
    const b = few.open(ADMIN_KEY);
    const c = few.open(ADMIN_KEY);
    expect(few.size).toBe(2);
    expect(few.get(a.id, [ADMIN_KEY])).toBeUndefined();
    expect(few.get(b.id, [ADMIN_KEY])).toBe(b);
    expect(few.get(c.id, [ADMIN_KEY])).toBe(c);
    expect(few.get(undefined, [ADMIN_KEY])).toBeUndefined();
    expect(few.get('', [ADMIN_KEY])).toBeUndefined();
  });
});

describe('the console page without a build', () => {
  it('is a 404 saying how to build it', async () => {
    const response = await fetch(`${base}/console/`);
    expect(response.status).toBe(404);
    expect(((await response.json()) as { error: { message: string } }).error.message).toContain('npm run build');
    const bare = await fetch(`${base}/console`, { redirect: 'manual' });
    expect([bare.status, bare.headers.get('location')]).toEqual([301, '/console/']);
  });
});
