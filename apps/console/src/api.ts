/**
 * Calls to the edge: the console's session endpoints and the admin API, with the session cookie
 * (sent by the browser, never readable here) and, on every state-changing call, the session's
 * CSRF token in `x-csrf-token`. The token lives in this module's memory only: a reload asks the
 * edge for it again (`GET /console/api/session`).
 */

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

let csrfToken: string | undefined;

interface SessionBody {
  csrf_token: string;
  expires_at: string;
}

/** The error message of an admin API error body (`{error: {message}}`), or the status text. */
async function errorOf(response: Response): Promise<ApiError> {
  let message = `${response.status} ${response.statusText}`;
  try {
    const body = (await response.json()) as { error?: { message?: string } };
    if (typeof body.error?.message === 'string') message = body.error.message;
  } catch {
    // not JSON: keep the status line
  }
  return new ApiError(response.status, message);
}

async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET' && csrfToken !== undefined) headers['x-csrf-token'] = csrfToken;
  const response = await fetch(path, {
    method,
    headers,
    credentials: 'same-origin',
    cache: 'no-store',
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  if (response.status === 401) onSignedOut?.();
  if (!response.ok) throw await errorOf(response);
  if (response.status === 204) return undefined as T;
  return (await response.json()) as T;
}

/** Called when the edge answers 401 (the session expired or was ended). */
let onSignedOut: (() => void) | undefined;
export function whenSignedOut(callback: () => void): void {
  onSignedOut = callback;
}

/** Resumes the cookie's session; false when there is none. */
export async function resumeSession(): Promise<boolean> {
  const response = await fetch('/console/api/session', { credentials: 'same-origin', cache: 'no-store' });
  if (!response.ok) return false;
  csrfToken = ((await response.json()) as SessionBody).csrf_token;
  return true;
}

/** Logs in with an admin key; the key is sent once and kept nowhere. @throws ApiError (401 for a wrong key). */
export async function logIn(key: string): Promise<void> {
  const response = await fetch('/console/api/login', {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    credentials: 'same-origin',
    body: JSON.stringify({ key }),
  });
  if (!response.ok) throw await errorOf(response);
  csrfToken = ((await response.json()) as SessionBody).csrf_token;
}

export async function logOut(): Promise<void> {
  try {
    await call('POST', '/console/api/logout');
  } finally {
    csrfToken = undefined;
  }
}

export const get = <T>(path: string) => call<T>('GET', path);
export const post = <T>(path: string, body?: unknown) => call<T>('POST', path, body);
