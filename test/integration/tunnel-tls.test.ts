/**
 * The tunnel over TLS: the edge serves it with a certificate (`--tls-cert`/`--tls-key`), the agent
 * dials `https://` and trusts the edge's CA (`--tls-ca`), and requests flow as over h2c.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { API_KEY, JOIN_TOKEN, startAgent, startEdge, startSim, stopAll } from './harness';

afterAll(stopAll);

it('registers an agent over TLS and answers through it', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'iop-tls-'));
  const cert = path.join(dir, 'edge.crt');
  const key = path.join(dir, 'edge.key');
  // A self-signed certificate for 127.0.0.1 (openssl ships with the machine image).
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      key,
      '-out',
      cert,
      '-days',
      '1',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
    ],
    { stdio: 'ignore' },
  );
  const sim = await startSim(['--models', 'sim-model', '--output-tokens', '5']);
  const edge = await startEdge({ args: ['--tls-cert', cert, '--tls-key', key] });
  // The start-up log line says the tunnel is TLS.
  expect(edge.proc.lines.find((line) => line.msg === 'edge listening')?.tls).toBe(true);
  const agent = await startAgent({
    tunnelPort: edge.tunnelPort,
    id: 'tls-agent',
    backendUrl: sim.url,
    models: ['sim-model'],
    args: ['--edge', `https://127.0.0.1:${edge.tunnelPort}`, '--tls-ca', cert],
    token: JOIN_TOKEN,
  });
  expect(agent.lines.some((line) => line.msg === 'registered')).toBe(true);
  const client = new OpenAI({ apiKey: API_KEY, baseURL: edge.baseURL, maxRetries: 0 });
  const completion = await client.chat.completions.create({
    model: 'sim-model',
    messages: [{ role: 'user', content: 'hi' }],
  });
  expect(completion.usage?.completion_tokens).toBe(5);
});
