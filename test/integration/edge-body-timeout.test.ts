/**
 * A request body that never finishes: a raw socket sends the headers and part of the body, then
 * stalls. Every inference endpoint answers a 408 in its own dialect's envelope once
 * `--body-timeout-ms` has passed (not Node's 120 s `requestTimeout` with a 400), and closes the
 * connection; a body that keeps coming within the limit is served.
 */
import net from 'node:net';
import { API_KEY, startAgent, startEdge, startSim, stopAll, type EdgeHandle } from './harness';

const BODY_TIMEOUT_MS = 1_500;
let edge: EdgeHandle;

beforeAll(async () => {
  const sim = await startSim(['--models', 'sim-model', '--output-tokens', '4']);
  edge = await startEdge({ args: ['--body-timeout-ms', String(BODY_TIMEOUT_MS)] });
  await startAgent({ tunnelPort: edge.tunnelPort, id: 'timeout-agent', backendUrl: sim.url, models: ['sim-model'] });
}, 60_000);

afterAll(stopAll);

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: Record<string, unknown>;
  /** ms from the first byte sent to the answer's first byte. */
  afterMs: number;
  /** The edge closed the connection after the answer. */
  closed: boolean;
}

/**
 * Sends `head` and `parts` (each after `gapMs`), then waits; resolves with the answer once the edge closes the socket
 * or 20 s pass.
 */
function raw(path: string, headers: Record<string, string>, parts: string[], gapMs: number): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(edge.port, '127.0.0.1');
    const started = performance.now();
    let firstAt: number | undefined;
    let text = '';
    const head = [
      `POST ${path} HTTP/1.1`,
      `host: 127.0.0.1:${edge.port}`,
      ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
      '',
      '',
    ].join('\r\n');
    socket.on('connect', () => {
      socket.write(head);
      parts.forEach((part, i) => setTimeout(() => !socket.destroyed && socket.write(part), i * gapMs));
    });
    socket.on('data', (chunk: Buffer) => {
      firstAt ??= performance.now();
      text += chunk.toString('utf8');
    });
    const guard = setTimeout(() => socket.destroy(), 20_000);
    socket.on('error', () => {});
    socket.on('close', () => {
      clearTimeout(guard);
      const [top, ...rest] = text.split('\r\n\r\n');
      if (top === undefined || top === '') return reject(new Error('no answer before the connection closed'));
      const lines = top.split('\r\n');
      const status = Number(lines[0]!.split(' ')[1]);
      const parsed = Object.fromEntries(
        lines
          .slice(1)
          .map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]),
      );
      let bodyText = rest.join('\r\n\r\n');
      // Chunked answers (streams) are not expected here; a content-length body is read as is.
      if (parsed['transfer-encoding'] === 'chunked')
        bodyText = bodyText.replace(/^[0-9a-f]+\r\n/, '').replace(/\r\n0\r\n\r\n$/, '');
      resolve({
        status,
        headers: parsed,
        body: JSON.parse(bodyText) as Record<string, unknown>,
        afterMs: (firstAt ?? performance.now()) - started,
        closed: true,
      });
    });
  });
}

const chat = JSON.stringify({ model: 'sim-model', messages: [{ role: 'user', content: 'x'.repeat(2000) }] });
const messages = JSON.stringify({
  model: 'sim-model',
  max_tokens: 8,
  messages: [{ role: 'user', content: 'x'.repeat(2000) }],
});
const responses = JSON.stringify({ model: 'sim-model', input: 'x'.repeat(2000) });

describe('a request body that stalls', () => {
  it.each([
    ['/v1/chat/completions', chat, { authorization: `Bearer ${API_KEY}` }, 'openai'],
    ['/v1/responses', responses, { authorization: `Bearer ${API_KEY}` }, 'openai'],
    ['/v1/messages', messages, { 'x-api-key': API_KEY, 'anthropic-version': '2023-06-01' }, 'anthropic'],
  ] as const)(
    '%s: a 408 in its dialect once --body-timeout-ms has passed, and the connection closed',
    async (path, body, auth, dialect) => {
      const answer = await raw(
        path,
        { ...auth, 'content-type': 'application/json', 'content-length': String(body.length) },
        [body.slice(0, 500)],
        0,
      );
      expect(answer.status).toBe(408);
      expect(answer.afterMs).toBeGreaterThanOrEqual(BODY_TIMEOUT_MS - 50);
      expect(answer.afterMs).toBeLessThan(BODY_TIMEOUT_MS + 5_000);
      expect(answer.headers.connection).toBe('close');
      expect(answer.closed).toBe(true);
      if (dialect === 'openai') {
        expect(answer.body).toMatchObject({ error: { type: 'server_error', code: 'timeout' } });
        expect((answer.body.error as { message: string }).message).toMatch(
          /request body did not arrive within 1500 ms \(500 bytes received\)/,
        );
      } else {
        expect(answer.body).toMatchObject({ type: 'error', error: { type: 'timeout_error' } });
      }
    },
    30_000,
  );

  it('a chunked body that stalls is a 408 too', async () => {
    const half = chat.slice(0, 700);
    const answer = await raw(
      '/v1/chat/completions',
      { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
      [`${half.length.toString(16)}\r\n${half}\r\n`],
      0,
    );
    expect(answer.status).toBe(408);
    expect(answer.afterMs).toBeLessThan(BODY_TIMEOUT_MS + 5_000);
  }, 30_000);

  it('a slow body that arrives within the limit is served', async () => {
    const thirds = [chat.slice(0, 700), chat.slice(700, 1400), chat.slice(1400)];
    const answer = await raw(
      '/v1/chat/completions',
      {
        authorization: `Bearer ${API_KEY}`,
        'content-type': 'application/json',
        'content-length': String(chat.length),
        connection: 'close',
      },
      thirds,
      300,
    );
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ object: 'chat.completion' });
  }, 30_000);
});
