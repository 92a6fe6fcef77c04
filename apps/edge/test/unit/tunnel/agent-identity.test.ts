import type { Http2Session } from 'node:http2';
import { create } from '@bufbuild/protobuf';
import { Code, ConnectError } from '@connectrpc/connect';
import { RegisterSchema } from '@iop/proto';
import pino from 'pino';
import { AgentIdentities } from '../../../src/tunnel/agent-identity';
import { RunRegistry } from '../../../src/tunnel/run-registry.js';
import { AgentSession } from '../../../src/tunnel/agent-session';

/** A connection stand-in whose PING is answered (alive) or never (half-open). */
function connection(answers: boolean): Http2Session {
  return {
    destroyed: false,
    closed: false,
    ping(callback: (error: Error | null) => void) {
      if (answers) setImmediate(() => callback(null));
      return true;
    },
  } as unknown as Http2Session;
}

function setup(pingTimeoutMs = 200) {
  const sessions: AgentSession[] = [];
  const identities = new AgentIdentities({
    sessions: () => sessions,
    heartbeatIntervalMs: 5_000,
    pingTimeoutMs,
    logger: pino({ level: 'silent' }),
  });
  let count = 0;
  const register = (agentId: string, resumeToken: string, conn: Http2Session) =>
    identities.claim(agentId, resumeToken, (earlier) => {
      for (const session of earlier) session.close();
      const session = new AgentSession(
        create(RegisterSchema, { agentId, models: [{ id: 'm' }], maxConcurrency: 1 }),
        `ses_${count++}`,
        new RunRegistry(),
      );
      sessions.push(session);
      return { session, token: identities.issue(session, conn) };
    });
  return { sessions, register };
}

const refusal = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: unknown) => ConnectError.from(error).code,
  );

describe('AgentIdentities', () => {
  it('refuses a live id without its token, hands it over with the token', async () => {
    const { register } = setup();
    const first = await register('gpu-1', '', connection(true));
    expect(await refusal(register('gpu-1', '', connection(true)))).toBe(Code.AlreadyExists);
    expect(await refusal(register('gpu-1', 'guess', connection(true)))).toBe(Code.AlreadyExists);
    expect(first.session.closed).toBe(false);
    const second = await register('gpu-1', first.token, connection(true));
    expect(first.session.closed).toBe(true);
    expect(second.token).not.toBe(first.token);
  });

  it('gives the id to a Register without a token when the holder does not answer a PING', async () => {
    const { register } = setup(100);
    const first = await register('gpu-1', '', connection(false));
    const startedAt = Date.now();
    await register('gpu-1', '', connection(true));
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(90);
    expect(first.session.closed).toBe(true);
  });

  it('lets only one of two racing Registers take a free id', async () => {
    const { sessions, register } = setup();
    const results = await Promise.allSettled([
      register('gpu-1', '', connection(true)),
      register('gpu-1', '', connection(true)),
    ]);
    expect(results.map((result) => result.status).sort()).toEqual(['fulfilled', 'rejected']);
    expect(sessions.filter((session) => !session.closed)).toHaveLength(1);
  });
});
