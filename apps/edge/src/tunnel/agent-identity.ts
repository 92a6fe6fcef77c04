/**
 * Who owns an agent id: the live session that registered it. Each accepted Register gets a fresh
 * resume token (32 random bytes, base64url) in `Registered`; the edge keeps only its SHA-256.
 *
 * A Register of an id that a live session holds is decided here:
 * - it carries that session's resume token: the same agent on a new connection (its old one was
 *   cut and the edge has not noticed yet). It takes over at once; the old session is closed.
 * - it does not: the edge sends an HTTP/2 PING (RFC 9113 §6.7) on the old session's connection.
 *   Answered within `pingTimeoutMs`: the id is in use, and the Register is refused with
 *   ALREADY_EXISTS — another process with the same id and a valid join token cannot take the
 *   agent's runs. Not answered (or the connection is gone): the old session is dead or half-open
 *   (e.g. the agent process was restarted and lost its token, which agents keep in memory only),
 *   so it is closed and the new session takes the id. A restarted agent therefore waits at most
 *   one ping timeout, not the heartbeat timeout.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Http2Session } from 'node:http2';
import { Code, ConnectError, createContextKey } from '@connectrpc/connect';
import type { Logger } from 'pino';
import { secretEquals } from '@iop/core';
import { sessionTag } from '@iop/proto';
import type { AgentSession } from './agent-session.js';

/** The HTTP/2 connection a tunnel call arrived on (set by server.ts through connect-node's `contextValues`). */
export const TUNNEL_CONNECTION = createContextKey<Http2Session | undefined>(undefined, {
  description: 'the HTTP/2 session of a tunnel call',
});

/** How long the holder of an id has to answer a PING before a new Register takes the id, ms. */
export const OWNER_PING_TIMEOUT_MS = 3_000;

export interface AgentIdentitiesOptions {
  /** The sessions connected now. */
  sessions: () => Iterable<AgentSession>;
  /**
   * The heartbeat period, ms: a session without a connection to ping counts as alive while it heartbeats within 2
   * periods.
   */
  heartbeatIntervalMs: number;
  pingTimeoutMs?: number;
  logger: Logger;
}

interface Owner {
  tokenDigest: Buffer;
  connection: Http2Session | undefined;
}

const digest = (token: string): Buffer => createHash('sha256').update(token).digest();

export class AgentIdentities {
  private readonly owners = new WeakMap<AgentSession, Owner>();
  /** The claim of each id in progress: claims of one id run one after another. */
  private readonly claiming = new Map<string, Promise<unknown>>();

  constructor(private readonly options: AgentIdentitiesOptions) {}

  /** Records `session` as its id's owner on `connection`; returns the resume token for its `Registered`. */
  issue(session: AgentSession, connection: Http2Session | undefined): string {
    const token = randomBytes(32).toString('base64url');
    this.owners.set(session, { tokenDigest: digest(token), connection });
    return token;
  }

  /**
   * Decides a Register of `agentId` presenting `resumeToken` ('' for none) and, when it may take
   * the id, calls `accept` with the earlier sessions it replaces (the caller closes them and adds
   * the new session there). Claims of one id are serialized up to the end of `accept`, so two
   * Registers racing for a free id cannot both win.
   * @throws ConnectError ALREADY_EXISTS when a live session holds the id and the token is not its.
   */
  async claim<T>(agentId: string, resumeToken: string, accept: (earlier: AgentSession[]) => T): Promise<T> {
    const before = this.claiming.get(agentId) ?? Promise.resolve();
    const mine = before.then(async () => accept(await this.decide(agentId, resumeToken)));
    const settled = mine.catch(() => undefined);
    this.claiming.set(agentId, settled);
    void settled.then(() => {
      if (this.claiming.get(agentId) === settled) this.claiming.delete(agentId);
    });
    return mine;
  }

  private async decide(agentId: string, resumeToken: string): Promise<AgentSession[]> {
    const earlier = [...this.options.sessions()].filter((session) => session.agentId === agentId && !session.closed);
    if (earlier.length === 0) return [];
    const presented = resumeToken === '' ? undefined : digest(resumeToken);
    const { logger } = this.options;
    for (const session of earlier) {
      const owner = this.owners.get(session);
      if (presented !== undefined && owner !== undefined && secretEquals(presented, owner.tokenDigest)) {
        logger.info(
          { agentId, session: sessionTag(session.sessionId) },
          'agent resumed on a new connection: its earlier session is closed',
        );
        continue;
      }
      if (await this.alive(session, owner)) {
        logger.warn(
          { agentId, session: sessionTag(session.sessionId), resumeToken: presented === undefined ? 'none' : 'wrong' },
          'agent refused: its id is held by a live session',
        );
        throw new ConnectError(
          `agent id ${agentId} is in use by a live session; a reconnect of the same agent presents its resume_token`,
          Code.AlreadyExists,
        );
      }
      logger.warn(
        { agentId, session: sessionTag(session.sessionId) },
        'the earlier session of this agent id does not answer: the new session takes the id',
      );
    }
    return earlier;
  }

  private alive(session: AgentSession, owner: Owner | undefined): Promise<boolean> {
    const connection = owner?.connection;
    if (connection === undefined)
      return Promise.resolve(Date.now() - session.lastHeartbeatAt < 2 * this.options.heartbeatIntervalMs);
    if (connection.destroyed || connection.closed) return Promise.resolve(false);
    const timeoutMs = this.options.pingTimeoutMs ?? OWNER_PING_TIMEOUT_MS;
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), timeoutMs);
      const sent = connection.ping((error) => {
        clearTimeout(timer);
        resolve(error === null && !session.closed);
      });
      if (!sent) {
        clearTimeout(timer);
        resolve(false);
      }
    });
  }
}
