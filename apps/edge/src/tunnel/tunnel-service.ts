/**
 * The edge's Control side of `iop.v1.TunnelService`: gRPC calls are served by control-stream-handler.ts on raw HTTP/2
 * streams, the Connect and gRPC-Web protocols by connect-node, both through the one `controlHandler` here, so any
 * standard gRPC client can be an agent. Run calls (gRPC) are served by run-stream-handler.ts; a Run in the Connect or
 * gRPC-Web protocol is UNIMPLEMENTED.
 *
 * Control: the first message must be Register with a valid join token, otherwise the call fails with UNAUTHENTICATED
 * (bad token) or INVALID_ARGUMENT (no Register). The edge answers Registered and keeps the stream open for assignments,
 * cancels and drain; when it ends, the agent leaves the pool and its runs fail. An edge that is shutting down refuses
 * Register with UNAVAILABLE. A Control stream that sends no Register within `registerTimeoutMs` fails with
 * DEADLINE_EXCEEDED. An agent id belongs to its live session (agent-identity.ts): a second Register of a live id is
 * refused with ALREADY_EXISTS unless it presents the session's resume token, or the old session does not answer a PING;
 * then the new session replaces the old one, whose runs fail. Unauthenticated connections are bounded by
 * connection-guard.ts. Session ids are credentials: logs show a prefix only. A `ResidencyReport` (agents with the
 * `kv-events` capability) goes to the pool's residency index under this stream's own session id, so an agent writes
 * only its own residency; a refused one is logged with its reason.
 */
import { create } from '@bufbuild/protobuf';
import { Code, ConnectError, type ConnectRouter, type HandlerContext } from '@connectrpc/connect';
import { newId, secretIn } from '@iop/core';
import type { Http2Session } from 'node:http2';
import {
  RegisteredSchema,
  TunnelService,
  edgeMessage,
  type AgentMessage,
  type EdgeMessage,
  type ResidencyReport,
  sessionTag,
} from '@iop/proto';
import type { Logger } from 'pino';
import { AgentSession } from './agent-session.js';
import { written } from './large-assignments.js';
import { AgentIdentities, TUNNEL_CONNECTION } from './agent-identity.js';
import type { ConnectionGuard } from './connection-guard.js';
import type { RunRegistry } from './run-registry.js';
import type { AgentRegistry } from './agent-registry.js';
import type { ResidencySink } from '../pool/residency-index.js';

export interface TunnelServiceOptions {
  registry: AgentRegistry;
  runs: RunRegistry;
  /** Where each session's residency reports go (the pool's index); absent = reports are ignored. */
  residency?: ResidencySink;
  /**
   * Accepted join tokens; empty = any agent may join (logged as a warning at start). A getter is read at each Register
   * (config reload).
   */
  joinTokens: readonly string[] | (() => readonly string[]);
  heartbeatIntervalMs: number;
  /** A Control stream must send Register within this time, ms. */
  registerTimeoutMs: number;
  /**
   * Whether the edge takes new agents: false while it shuts down (Register is refused with UNAVAILABLE; the agent tries
   * again, and its other edges serve meanwhile).
   */
  admitting?: () => boolean;
  /** Bounds unauthenticated connections; told when a connection proves itself. */
  guard: ConnectionGuard;
  edgeVersion: string;
  logger: Logger;
}

/** The first Control message, or a DEADLINE_EXCEEDED failure after `timeoutMs`. */
async function firstMessage(
  iterator: AsyncIterator<AgentMessage>,
  timeoutMs: number,
): Promise<IteratorResult<AgentMessage>> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(
      () => reject(new ConnectError(`no Register within ${timeoutMs} ms`, Code.DeadlineExceeded)),
      timeoutMs,
    );
  });
  try {
    return await Promise.race([iterator.next(), deadline]);
  } finally {
    clearTimeout(timer);
  }
}

function tokenAccepted(token: string, accepted: readonly string[]): boolean {
  return accepted.length === 0 || secretIn(token, accepted);
}

/** What a Control call's handler knows of its call: when it ends, and the HTTP/2 connection it arrived on. */
export interface ControlCall {
  /** Aborted when the call ends (the agent or the connection went away). */
  signal: AbortSignal;
  connection: Http2Session | undefined;
}

/**
 * The Control call's logic, whatever serves it (control-stream-handler.ts for gRPC, connect-node
 * for the Connect and gRPC-Web protocols): the agent's messages in, the edge's out.
 * @throws ConnectError (from the returned iterable) with the status the call ends with.
 */
export type ControlHandler = (requests: AsyncIterable<AgentMessage>, call: ControlCall) => AsyncIterable<EdgeMessage>;

export function controlHandler(options: TunnelServiceOptions): ControlHandler {
  const { registry, runs, logger, guard } = options;
  const identities = new AgentIdentities({
    sessions: () => registry.all(),
    heartbeatIntervalMs: options.heartbeatIntervalMs,
    logger,
  });

  return async function* control(
    requests: AsyncIterable<AgentMessage>,
    context: ControlCall,
  ): AsyncIterable<EdgeMessage> {
    const iterator = requests[Symbol.asyncIterator]();
    const first = await firstMessage(iterator, options.registerTimeoutMs);
    if (first.done === true || first.value.message.case !== 'register') {
      throw new ConnectError('the first Control message must be Register', Code.InvalidArgument);
    }
    const register = first.value.message.value;
    if (
      !tokenAccepted(
        register.joinToken,
        typeof options.joinTokens === 'function' ? options.joinTokens() : options.joinTokens,
      )
    ) {
      logger.warn({ agentId: register.agentId }, 'agent refused: invalid join token');
      throw new ConnectError('invalid join token', Code.Unauthenticated);
    }
    if (register.agentId === '' || register.models.length === 0) {
      throw new ConnectError('Register needs an agent_id and at least one model', Code.InvalidArgument);
    }
    if (options.admitting?.() === false) {
      logger.info({ agentId: register.agentId }, 'agent refused: the edge is shutting down');
      throw new ConnectError('the edge is shutting down', Code.Unavailable);
    }
    const connection = context.connection;
    guard.authenticate(connection);
    const session = await identities.claim(register.agentId, register.resumeToken, (earlierSessions) => {
      if (context.signal.aborted) throw new ConnectError('the Control stream ended during registration', Code.Canceled);
      for (const earlier of earlierSessions) {
        logger.warn(
          { agentId: register.agentId, session: sessionTag(earlier.sessionId) },
          'a new session of this agent replaces its earlier one',
        );
        earlier.close();
      }
      const accepted = new AgentSession(register, newId('ses_'), runs);
      const token = identities.issue(accepted, connection);
      // Registered leads the stream: once in the registry the session may be given queued runs at
      // once, and the agent opens their Run calls with the session id Registered carries.
      accepted.send(
        edgeMessage({
          case: 'registered',
          value: create(RegisteredSchema, {
            sessionId: accepted.sessionId,
            heartbeatIntervalMs: options.heartbeatIntervalMs,
            edgeVersion: options.edgeVersion,
            resumeToken: token,
          }),
        }),
      );
      registry.add(accepted);
      return accepted;
    });
    logger.info(
      {
        agentId: session.agentId,
        session: sessionTag(session.sessionId),
        models: session.models.map((model) => model.id),
        maxConcurrency: session.maxConcurrency,
        backend: session.backend,
        agentVersion: session.agentVersion,
      },
      'agent registered',
    );
    let ended = false;
    const end = (reason: string) => {
      // Not `session.closed`: a replacing session closes this one first, and it must still leave.
      if (ended) return;
      ended = true;
      session.close();
      registry.remove(session);
      runs.failSession(session);
      logger.info({ agentId: session.agentId, session: sessionTag(session.sessionId), reason }, 'agent left');
    };
    context.signal.addEventListener('abort', () => end('connection closed'), { once: true });
    // A report is this session's own: the index is written under the session id of this stream.
    const onResidency = (report: ResidencyReport) => {
      const refusal = options.residency?.apply(session.sessionId, report);
      if (refusal !== undefined) {
        logger.warn(
          {
            agentId: session.agentId,
            session: sessionTag(session.sessionId),
            reason: refusal.reason,
            detail: refusal.detail,
          },
          'residency report refused',
        );
      }
    };
    const livenessTimer = setInterval(() => {
      if (Date.now() - session.lastMessageAt > options.heartbeatIntervalMs * 3) end('heartbeat timeout');
    }, options.heartbeatIntervalMs);
    livenessTimer.unref();
    void (async () => {
      try {
        for (let next = await iterator.next(); next.done !== true; next = await iterator.next()) {
          const message = next.value.message;
          session.lastMessageAt = Date.now();
          if (message.case === 'heartbeat') session.onHeartbeat(message.value);
          else if (message.case === 'runRejected') {
            runs.reject(message.value.runId, message.value.reason);
            session.onRunRejected(message.value.reason);
          } else if (message.case === 'residency' && !ended) onResidency(message.value);
        }
        end('agent closed the stream');
      } catch (error) {
        end(error instanceof Error ? error.message : 'stream error');
      }
    })();
    try {
      // The writer asks for the next message once it has written this one: a large assignment's receipt.
      for await (const message of session.outbound) {
        yield message;
        written(message);
      }
    } finally {
      clearInterval(livenessTimer);
      end('control stream ended');
    }
  };
}

/** The Control route for connect-node (Connect and gRPC-Web agents; gRPC ones take control-stream-handler.ts). */
export function tunnelRoutes(control: ControlHandler): (router: ConnectRouter) => void {
  return (router: ConnectRouter) => {
    router.service(TunnelService, {
      control: (requests: AsyncIterable<AgentMessage>, context: HandlerContext) =>
        control(requests, { signal: context.signal, connection: context.values.get(TUNNEL_CONNECTION) }),
    });
  };
}
