import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ProviderTunnelFrame_Kind as Kind } from '@iop/proto';
import { startAgent, type AgentHandle } from '../../src/start-agent.js';
import { captureLogs } from './helpers/log-capture';
import { TestEdge, waitFor } from './helpers/test-edge';
import { sleep } from '@iop/core';

const TOTAL_BYTES = 64 << 20;
const SLICE_BYTES = 64 << 10;

/** A backend that writes TOTAL_BYTES as fast as its socket takes them, honouring `drain`. */
async function startFloodBackend(): Promise<{
  server: http.Server;
  url: string;
  written: () => number;
  digest: () => string;
}> {
  let written = 0;
  const hash = createHash('sha256');
  let digest = '';
  const server = http.createServer((request, response) => {
    request.resume();
    if (request.url === '/v1/models') {
      response.writeHead(200, { 'content-type': 'application/json' }).end('{"data":[{"id":"m"}]}');
      return;
    }
    if (request.url !== '/flood') {
      response.writeHead(404).end(); // /tokenize, /metrics
      return;
    }
    response.writeHead(200, { 'content-type': 'application/octet-stream' });
    let counter = 0;
    const pump = (): void => {
      while (written < TOTAL_BYTES) {
        const slice = Buffer.alloc(SLICE_BYTES, counter++ % 251);
        hash.update(slice);
        written += slice.length;
        if (!response.write(slice)) return void response.once('drain', pump);
      }
      digest = hash.digest('hex');
      response.end();
    };
    pump();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    server,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    written: () => written,
    digest: () => digest,
  };
}

describe('backpressure', () => {
  let agent: AgentHandle | undefined;
  let edge: TestEdge;
  let backend: Awaited<ReturnType<typeof startFloodBackend>>;

  afterEach(async () => {
    await agent?.close();
    await edge.stop();
    backend.server.closeAllConnections();
    await new Promise((resolve) => backend.server.close(resolve));
  });

  test('a stalled Run stream stops the agent reading its backend; resumed, every byte arrives in order', async () => {
    edge = new TestEdge({ joinToken: 't' });
    await edge.start();
    backend = await startFloodBackend();
    const logs = captureLogs();
    agent = await startAgent({
      edgeUrl: edge.url,
      joinToken: 't',
      backend: 'openai',
      backendUrl: backend.url,
      logger: logs.logger,
    });
    await agent.agent.registered;
    let release!: () => void;
    edge.runGate = new Promise((resolve) => (release = resolve));
    edge.assign({ runId: 'big', path: '/flood' });
    await waitFor(() => backend.written() > 0, 5_000, 'backend writing');
    await sleep(500);
    // Without backpressure the agent would have read the whole body into memory by now. With it,
    // the agent holds at most a few frames, and the backend is blocked once the loopback socket
    // buffers (kernel tcp_rmem/tcp_wmem, tens of MiB here) are full.
    expect(agent.agent.activeRuns.get('big')!.bodyBytes).toBeLessThan(1 << 20);
    expect(edge.runs.get('big')!.frames.length).toBeLessThanOrEqual(3);
    const writtenWhileStalled = backend.written();
    await sleep(200);
    expect(backend.written()).toBe(writtenWhileStalled);
    expect(writtenWhileStalled).toBeLessThan(TOTAL_BYTES);
    release();
    edge.runGate = undefined;
    await waitFor(() => edge.runs.get('big')?.ended === true, 20_000, 'run end');
    const frames = edge.runs.get('big')!.frames;
    const hash = createHash('sha256');
    let bytes = 0;
    for (const frame of frames) {
      if (frame.kind !== Kind.BODY) continue;
      hash.update(frame.body);
      bytes += frame.body.length;
    }
    expect(bytes).toBe(TOTAL_BYTES);
    expect(hash.digest('hex')).toBe(backend.digest());
    expect(frames.at(-1)!.kind).toBe(Kind.END);
  }, 30_000);
});
