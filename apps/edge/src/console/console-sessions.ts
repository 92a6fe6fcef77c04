/**
 * Sessions of the web console (`/console`): an operator logs in once with an admin key and gets a
 * random session id in an HttpOnly cookie; the browser never keeps the key. Sessions live in this
 * edge's memory (a restart logs everyone out; behind several edges, route `/console` and `/admin`
 * of one browser to one edge, or log in on each). Each session has a CSRF token, which the console
 * sends in `x-csrf-token` on every state-changing call (OWASP CSRF Prevention Cheat Sheet,
 * "synchronizer token pattern"), and the SHA-256 of the admin key it was opened with: removing
 * that key from `adminKeys` (config reload) ends its sessions.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

export interface ConsoleSession {
  /** 256 random bits, base64url: the cookie's value. */
  id: string;
  /** 256 random bits, base64url: the `x-csrf-token` header's value. */
  csrfToken: string;
  /** SHA-256 (hex) of the admin key used to log in. */
  adminKeyHash: string;
  createdAt: number;
  /** Unix ms; the session is gone after this. */
  expiresAt: number;
}

/** SHA-256 (hex) of an admin key. */
export function adminKeyHash(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

/** Compares two tokens in constant time (for equal lengths). */
export function sameToken(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

export class ConsoleSessions {
  /** By the SHA-256 of the session id: the map holds no usable cookie value. */
  private readonly sessions = new Map<string, ConsoleSession>();

  /**
   * @param ttlMs a session's lifetime from its login, ms.
   * @param maxSessions sessions kept at most; a login beyond that ends the oldest.
   */
  constructor(
    private readonly ttlMs: () => number,
    private readonly maxSessions = 1000,
    private readonly now: () => number = Date.now,
  ) {}

  get size(): number {
    return this.sessions.size;
  }

  /** Opens a session for a login with the admin key `adminKey`. */
  open(adminKey: string): ConsoleSession {
    this.sweep();
    while (this.sessions.size >= this.maxSessions) this.sessions.delete(this.sessions.keys().next().value!);
    const createdAt = this.now();
    const session: ConsoleSession = {
      id: randomBytes(32).toString('base64url'),
      csrfToken: randomBytes(32).toString('base64url'),
      adminKeyHash: adminKeyHash(adminKey),
      createdAt,
      expiresAt: createdAt + this.ttlMs(),
    };
    this.sessions.set(adminKeyHash(session.id), session);
    return session;
  }

  /**
   * The live session of a cookie value, or undefined (unknown, expired, or its admin key is no
   * longer among `adminKeys`; such a session is removed).
   */
  get(id: string | undefined, adminKeys: readonly string[]): ConsoleSession | undefined {
    if (id === undefined || id === '') return undefined;
    const hash = adminKeyHash(id);
    const session = this.sessions.get(hash);
    if (session === undefined) return undefined;
    if (session.expiresAt <= this.now() || !adminKeys.some((key) => adminKeyHash(key) === session.adminKeyHash)) {
      this.sessions.delete(hash);
      return undefined;
    }
    return session;
  }

  /** Ends a session (logout). */
  close(id: string): void {
    this.sessions.delete(adminKeyHash(id));
  }

  /**
   * Drops expired sessions (insertion order is creation order, and every session has the same lifetime at its
   * creation).
   */
  private sweep(): void {
    const now = this.now();
    for (const [hash, session] of this.sessions) if (session.expiresAt <= now) this.sessions.delete(hash);
  }
}
