/** The built console's files as the edge serves them: content types, caching, the CSP, nothing outside the folder. */
import http from 'node:http';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import express from 'express';
import pino from 'pino';
import { CONSOLE_CSP, mountConsole } from '../../../src/console/console-routes.js';
import { ConsoleSessions } from '../../../src/console/console-sessions.js';
import { chatDialect } from '../../../src/dialects.js';
import type { EdgeContext } from '../../../src/edge-context.js';
import { errorHandler } from '../../../src/http/error-handler.js';
import { requestContext } from '../../../src/http/request-context.js';

let server: http.Server;
let base: string;

beforeAll(async () => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'iop-console-dist-'));
  const dist = path.join(root, 'dist');
  mkdirSync(path.join(dist, 'assets'), { recursive: true });
  writeFileSync(path.join(dist, 'index.html'), '<!doctype html><title>iop console</title>');
  writeFileSync(path.join(dist, 'assets', 'app-ABC123.js'), 'export {};');
  writeFileSync(path.join(dist, 'assets', 'app-ABC123.css'), 'body{}');
  writeFileSync(path.join(root, 'secret.txt'), 'outside the folder');
  const edge = { config: { adminKeys: [] }, logger: pino({ level: 'silent' }) } as unknown as EdgeContext;
  const app = express();
  app.use(requestContext(edge.logger));
  mountConsole(app, edge, new ConsoleSessions(() => 60_000), dist);
  app.use(errorHandler(() => chatDialect));
  server = http.createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

it.each([
  ['/console/', 'text/html; charset=utf-8', 'no-cache'],
  ['/console/assets/app-ABC123.js', 'text/javascript; charset=utf-8', 'public, max-age=31536000, immutable'],
  ['/console/assets/app-ABC123.css', 'text/css; charset=utf-8', 'public, max-age=31536000, immutable'],
])('%s: %s, cache-control %s, under the CSP', async (file, type, cache) => {
  const response = await fetch(`${base}${file}`);
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toBe(type);
  expect(response.headers.get('cache-control')).toBe(cache);
  expect(response.headers.get('content-security-policy')).toBe(CONSOLE_CSP);
  expect(response.headers.get('x-content-type-options')).toBe('nosniff');
  expect(response.headers.get('x-frame-options')).toBe('DENY');
});

it('serves nothing outside the built folder', async () => {
  for (const escape of [
    '/console/../secret.txt',
    '/console/%2e%2e/secret.txt',
    '/console/assets/..%2f..%2fsecret.txt',
  ]) {
    const response = await fetch(`${base}${escape}`);
    expect(response.status).not.toBe(200);
  }
});

it('refuses a login while no admin key is configured', async () => {
  const response = await fetch(`${base}/console/api/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{"key":"anything-at-all-00000"}',
  });
  expect(response.status).toBe(401);
  expect(((await response.json()) as { error: { message: string } }).error.message).toContain(
    'no admin keys configured',
  );
});
