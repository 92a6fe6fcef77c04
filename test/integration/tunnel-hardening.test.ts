/**
 * The tunnel port against peers that never register, and agent ids against impostors:
 * - connections that never register are capped, their streams are capped, and both are closed at
 *   the registration deadline; the edge's memory stays bounded under a flood of them;
 * - a second agent with a live agent's id and a valid join token is refused (ALREADY_EXISTS) and
 *   gets none of its runs;
 * - the real agent reconnecting after a network cut (the edge still holds its half-open session)
 *   is accepted at once with its resume token; a restarted agent (no token) once the old session
 *   fails to answer a PING, well before the heartbeat timeout.
 */
import http2 from 'node:http2';
import net from 'node:net';
import OpenAI from 'openai';
import { procStats } from '../../apps/bench/src/processes';
import {
  API_KEY,
  eventually,
  simRequests,
  startAgent,
  startEdge,
  startSim,
  stopAll,
  type EdgeHandle,
  type Proc,
  type SimHandle,
} from './harness';
import { ADMIN_KEY, admin, openStream, readChatStream } from './lifecycle-helpers';

afterAll(async () => {
  await stopAll();
});

async function metric(edge: EdgeHandle, name: string): Promise<number> {
  const text = await (await fetch(`${edge.url}/metrics`)).text();
  const line = text.split('\n').find((candidate) => candidate.startsWith(name));
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
}

interface Peer {
  closedAt: number | undefined;
  refusedStreams: number;
  otherStreamEnds: number;
}

/**
 * Opens `count` HTTP/2 connections to the tunnel port, each with `streams` Control streams that never send Register.
 */
function flood(port: number, count: number, streams: number): { peers: Peer[]; sessions: http2.ClientHttp2Session[] } {
  const peers: Peer[] = [];
  const sessions: http2.ClientHttp2Session[] = [];
  for (let index = 0; index < count; index++) {
    const peer: Peer = { closedAt: undefined, refusedStreams: 0, otherStreamEnds: 0 };
    const session = http2.connect(`http://127.0.0.1:${port}`);
    session.on('error', () => undefined);
    session.on('close', () => (peer.closedAt = Date.now()));
    for (let stream = 0; stream < streams; stream++) {
      const request = session.request(
        {
          ':method': 'POST',
          ':path': '/iop.v1.TunnelService/Control',
          'content-type': 'application/grpc',
          te: 'trailers',
        },
        { endStream: false },
      );
      request.on('error', () => undefined);
      request.on('close', () => {
        if (request.rstCode === http2.constants.NGHTTP2_REFUSED_STREAM) peer.refusedStreams++;
        else peer.otherStreamEnds++;
      });
      request.resume();
    }
    peers.push(peer);
    sessions.push(session);
  }
  return { peers, sessions };
}

describe('connections that never register', () => {
  let edge: EdgeHandle;
  let sim: SimHandle;

  beforeAll(async () => {
    sim = await startSim();
    edge = await startEdge({
      args: [
        '--tunnel-register-timeout-ms',
        '2000',
        '--tunnel-max-unauthenticated-connections',
        '8',
        '--tunnel-max-unauthenticated-streams',
        '4',
      ],
    });
  });

  it('are capped in number and streams, then closed at the registration deadline; agents still join', async () => {
    const startedAt = Date.now();
    const { peers, sessions } = flood(edge.tunnelPort, 40, 10);
    // Over the connection cap: closed on arrival, long before the deadline.
    await eventually(() => peers.filter((peer) => peer.closedAt !== undefined).length >= 32, 10_000);
    const early = peers.filter((peer) => peer.closedAt !== undefined && peer.closedAt - startedAt < 1_500);
    expect(early.length).toBe(32);
    const admitted = peers.filter((peer) => peer.closedAt === undefined);
    expect(admitted).toHaveLength(8);
    // Within the cap: 4 streams are served (waiting for Register), the other 6 refused.
    await eventually(() => admitted.every((peer) => peer.refusedStreams === 6));
    expect(await metric(edge, 'iop_tunnel_unauthenticated_connections')).toBe(8);
    // At the deadline every admitted connection is closed.
    await eventually(() => peers.every((peer) => peer.closedAt !== undefined), 15_000);
    for (const peer of admitted) expect(peer.closedAt! - startedAt).toBeGreaterThanOrEqual(1_900);
    for (const session of sessions) session.destroy();
    expect(await metric(edge, 'iop_tunnel_unauthenticated_connections')).toBe(0);
    expect(await metric(edge, 'iop_tunnel_refused_total{reason="connections"}')).toBe(32);
    expect(await metric(edge, 'iop_tunnel_refused_total{reason="streams"}')).toBe(48);
    expect(await metric(edge, 'iop_tunnel_refused_total{reason="register_timeout"}')).toBe(8);

    await startAgent({ tunnelPort: edge.tunnelPort, id: 'after-flood', backendUrl: sim.url, models: ['sim-model'] });
    const openai = new OpenAI({ baseURL: edge.baseURL, apiKey: API_KEY, maxRetries: 0 });
    const completion = await openai.chat.completions.create({
      model: 'sim-model',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(completion.choices[0]?.finish_reason).toBe('stop');
  });

  it('keep the edge memory bounded under a flood (300 connections x 30 streams)', async () => {
    const before = procStats(edge.proc.pid).rssBytes;
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, procStats(edge.proc.pid).rssBytes)), 50);
    const { peers, sessions } = flood(edge.tunnelPort, 300, 30);
    await eventually(() => peers.every((peer) => peer.closedAt !== undefined), 20_000);
    clearInterval(sampler);
    for (const session of sessions) session.destroy();
    console.log(
      `edge RSS under a flood of 300 x 30 unregistered streams: ${(before / 1048576).toFixed(0)} MiB before, peak ${(peak / 1048576).toFixed(0)} MiB`,
    );
    // With the caps lifted, the same flood grew this edge by 77-95 MiB (9,000 streams held); with
    // them, by 13-15 MiB (8 connections x 4 streams, plus the refused connections' churn).
    expect(peak - before).toBeLessThan(40 * 1024 * 1024);
    expect(await metric(edge, 'iop_tunnel_unauthenticated_connections')).toBe(0);
  });
});

/**
 * A TCP proxy whose connections can be cut as a network failure would: the agent's side is closed, the edge's side left
 * open and silent (half-open).
 */
class CuttableProxy {
  readonly server: net.Server;
  private pairs: Array<{ agentSide: net.Socket; edgeSide: net.Socket }> = [];
  private readonly halfOpen: net.Socket[] = [];

  constructor(targetPort: number) {
    this.server = net.createServer((agentSide) => {
      const edgeSide = net.connect(targetPort, '127.0.0.1');
      agentSide.on('error', () => undefined);
      edgeSide.on('error', () => undefined);
      agentSide.pipe(edgeSide);
      edgeSide.pipe(agentSide);
      this.pairs.push({ agentSide, edgeSide });
    });
  }

  async listen(): Promise<number> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return (this.server.address() as net.AddressInfo).port;
  }

  /** Every current connection: the agent sees it reset; the edge sees nothing at all. */
  cut(): void {
    for (const { agentSide, edgeSide } of this.pairs) {
      agentSide.unpipe(edgeSide);
      edgeSide.unpipe(agentSide);
      edgeSide.pause();
      agentSide.resetAndDestroy();
      this.halfOpen.push(edgeSide);
    }
    this.pairs = [];
  }

  /** Every current connection goes silent both ways, as behind a NAT that dropped it: no FIN, no RST, nothing. */
  blackhole(): void {
    for (const { agentSide, edgeSide } of this.pairs) {
      agentSide.unpipe(edgeSide);
      edgeSide.unpipe(agentSide);
      agentSide.pause();
      edgeSide.pause();
      this.halfOpen.push(agentSide, edgeSide);
    }
    this.pairs = [];
  }

  close(): void {
    for (const socket of this.halfOpen) socket.destroy();
    for (const { agentSide, edgeSide } of this.pairs) {
      agentSide.destroy();
      edgeSide.destroy();
    }
    this.server.close();
  }
}

describe('an agent id belongs to its live session', () => {
  let edge: EdgeHandle;
  let realSim: SimHandle;
  let impostorSim: SimHandle;
  let proxy: CuttableProxy;
  let real: Proc;
  const agentArgs = ['--reconnect-jitter-ms', '0'];
  const chatRequests = async (sim: SimHandle) =>
    (await simRequests(sim)).filter((record) => String(record.path).includes('chat')).length;

  beforeAll(async () => {
    realSim = await startSim(['--itl-ms', '20', '--output-tokens', '100']);
    impostorSim = await startSim();
    edge = await startEdge({ args: ['--admin-keys', ADMIN_KEY] });
    proxy = new CuttableProxy(edge.tunnelPort);
    const proxyPort = await proxy.listen();
    real = await startAgent({
      tunnelPort: proxyPort,
      id: 'gpu-1',
      backendUrl: realSim.url,
      models: ['sim-model'],
      args: [...agentArgs, '--edge-ping-interval-ms', '1000', '--edge-ping-timeout-ms', '1000'],
    });
  });

  afterAll(() => proxy.close());

  it('refuses a second agent with the same id and a valid join token; the first keeps its runs', async () => {
    const stream = await openStream(edge.baseURL);
    expect(stream.status).toBe(200);
    const impostor = await startAgent({
      tunnelPort: edge.tunnelPort,
      id: 'gpu-1',
      backendUrl: impostorSim.url,
      models: ['sim-model'],
      args: agentArgs,
      waitRegistered: false,
    });
    const refused = await impostor.waitFor(
      (line) => typeof line.msg === 'string' && line.msg.startsWith('the edge refused the agent id'),
    );
    expect(refused.code).toBe('AlreadyExists');
    // It keeps trying; every try is refused while the real agent lives.
    await eventually(
      () =>
        impostor.lines.filter(
          (line) => typeof line.msg === 'string' && line.msg.startsWith('the edge refused the agent id'),
        ).length >= 2,
      15_000,
    );
    expect(impostor.lines.some((line) => line.msg === 'registered')).toBe(false);

    const answer = readChatStream(await stream.body);
    expect(answer.done).toBe(true);
    expect(answer.error).toBeUndefined();
    const openai = new OpenAI({ baseURL: edge.baseURL, apiKey: API_KEY, maxRetries: 0 });
    for (let index = 0; index < 3; index++) {
      const completion = await openai.chat.completions.create({
        model: 'sim-model',
        max_tokens: 5,
        messages: [{ role: 'user', content: 'hi' }],
      });
      expect(completion.choices[0]?.finish_reason).toBe('length');
    }
    expect(await chatRequests(realSim)).toBe(4);
    expect(await chatRequests(impostorSim)).toBe(0);
    const agents = (await admin(edge.url, 'GET', '/admin/agents')).body as { data: Array<{ id: string }> };
    expect(agents.data.filter((agent) => agent.id === 'gpu-1')).toHaveLength(1);
    expect(edge.proc.lines.some((line) => line.msg === 'a new session of this agent replaces its earlier one')).toBe(
      false,
    );
    await impostor.kill();
  }, 60_000);

  const RESUMED = 'agent resumed on a new connection: its earlier session is closed';
  const countOf = (proc: Proc, msg: string) => proc.lines.filter((line) => line.msg === msg).length;

  /**
   * Breaks the agent's connection with `breakIt`; resolves once the agent registered again and the edge moved its
   * session over, with the time that took (ms).
   */
  async function redialAfter(breakIt: () => void): Promise<number> {
    const registered = countOf(real, 'registered');
    const resumed = countOf(edge.proc, RESUMED);
    const brokenAt = Date.now();
    breakIt();
    await eventually(() => countOf(real, 'registered') > registered && countOf(edge.proc, RESUMED) > resumed, 10_000);
    return Date.now() - brokenAt;
  }

  async function expectChatAnswered(): Promise<void> {
    const openai = new OpenAI({ baseURL: edge.baseURL, apiKey: API_KEY, maxRetries: 0 });
    const completion = await openai.chat.completions.create({
      model: 'sim-model',
      max_tokens: 5,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(completion.choices[0]?.finish_reason).toBe('length');
  }

  it('accepts the real agent reconnecting after a network cut at once, with its resume token', async () => {
    // The edge still held the old, half-open session (its heartbeat timeout is 15 s).
    expect(await redialAfter(() => proxy.cut())).toBeLessThan(8_000);
    expect(edge.proc.lines.some((line) => line.reason === 'heartbeat timeout')).toBe(false);
    await expectChatAnswered();
  }, 30_000);

  it('finds a connection gone silent (no FIN, no RST) with an unanswered PING and redials with its resume token', async () => {
    // PING after 1 s without a frame, closed 1 s later, then the reconnect backoff (jitter off).
    expect(await redialAfter(() => proxy.blackhole())).toBeLessThan(6_000);
    await expectChatAnswered();
  }, 30_000);

  it('gives the id to a restarted agent (no token) once the old session fails a PING, before the heartbeat timeout', async () => {
    const cutAt = Date.now();
    proxy.cut();
    await real.kill();
    const restarted = await startAgent({
      tunnelPort: edge.tunnelPort,
      id: 'gpu-1',
      backendUrl: realSim.url,
      models: ['sim-model'],
      args: agentArgs,
    });
    expect(Date.now() - cutAt).toBeLessThan(12_000);
    await edge.proc.waitFor(
      (line) => line.msg === 'the earlier session of this agent id does not answer: the new session takes the id',
      5_000,
    );
    expect(edge.proc.lines.some((line) => line.reason === 'heartbeat timeout')).toBe(false);
    const before = await chatRequests(realSim);
    const openai = new OpenAI({ baseURL: edge.baseURL, apiKey: API_KEY, maxRetries: 0 });
    const completion = await openai.chat.completions.create({
      model: 'sim-model',
      max_tokens: 5,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(completion.choices[0]?.finish_reason).toBe('length');
    expect(await chatRequests(realSim)).toBe(before + 1);
    await restarted.kill();
  }, 30_000);
});
