/**
 * The tunnel-tls component, run for real: the single-edge overlay with components/tunnel-tls
 * renders an edge and an agent whose environments (the mounted Secret's folder replaced by a
 * temporary one holding a certificate for 127.0.0.1) serve and dial the tunnel over TLS: the agent
 * joins through `https://` and checks the edge against `ca.crt`, and a client is served through
 * it; the same agent without the CA is refused by its own TLS check and never joins.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { launch, type Proc } from '../../apps/bench/src/processes';
import { eventually, startSim, stopAll } from './harness';
import { container, find, kustomize, resolvedEnv, stageDeploy, type K8sObject } from './k8s-support';

const MOUNT = '/etc/iop/tunnel-tls';
const procs: Proc[] = [];
let cleanup: () => void;
let objects: K8sObject[];
let tlsDir: string;

beforeAll(() => {
  const staged = stageDeploy();
  cleanup = staged.cleanup;
  const folder = path.join(staged.deploy, 'k8s/overlays/single-edge-tls');
  mkdirSync(folder);
  writeFileSync(
    path.join(folder, 'kustomization.yaml'),
    'resources: [../single-edge]\ncomponents: [../../components/tunnel-tls]\n',
  );
  objects = kustomize(folder);
  // What the Secret iop-tunnel-tls holds: a certificate for 127.0.0.1, its key, and its CA (itself).
  tlsDir = mkdtempSync(path.join(tmpdir(), 'iop-k8s-tls-'));
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      path.join(tlsDir, 'tls.key'),
      '-out',
      path.join(tlsDir, 'tls.crt'),
      '-days',
      '1',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
    ],
    { stdio: 'ignore' },
  );
  execFileSync('cp', [path.join(tlsDir, 'tls.crt'), path.join(tlsDir, 'ca.crt')]);
});

afterAll(async () => {
  await Promise.all(procs.map((proc) => proc.kill()));
  await stopAll();
  cleanup();
});

/** The rendered environment with the mounted folder's paths pointing at the temporary one. */
function envOf(workload: string, name: string): Record<string, string> {
  const env = resolvedEnv(objects, container(find(objects, 'Deployment', workload), name), `${workload}-pod`);
  return Object.fromEntries(
    Object.entries(env).map(([key, value]) => [
      key,
      value.startsWith(`${MOUNT}/`) ? path.join(tlsDir, value.slice(MOUNT.length + 1)) : value,
    ]),
  );
}

it('the edge serves the tunnel with the mounted certificate and the agent joins over https, checking it against ca.crt', async () => {
  const sim = await startSim(['--models', 'sim-model', '--output-tokens', '5']);
  const edgeEnv: Record<string, string> = {
    ...envOf('iop-edge', 'edge'),
    IOP_PORT: '0',
    IOP_TUNNEL_PORT: '0',
    IOP_DATA_DIR: mkdtempSync(path.join(tmpdir(), 'iop-k8s-data-')),
    IOP_STARTUP_GRACE_MS: '0',
  };
  expect(edgeEnv.IOP_TUNNEL_TLS_CERT_FILE).toBe(path.join(tlsDir, 'tls.crt'));
  const edgeCommand = container(find(objects, 'Deployment', 'iop-edge'), 'edge').command!;
  const edge = launch('k8s tls edge', edgeCommand[1]!, edgeCommand.slice(2), edgeEnv);
  procs.push(edge);
  const edgeReady = await edge.ready();
  const edgeUrl = `http://127.0.0.1:${edgeReady.port as number}`;
  const tunnel = `https://127.0.0.1:${edgeReady.tunnelPort as number}`;

  const agentEnv: Record<string, string> = {
    ...envOf('iop-agent-gpu', 'agent'),
    IOP_EDGE_URL: tunnel,
    IOP_BACKEND_URL: sim.url,
    IOP_METRICS_PORT: '0',
  };
  expect(agentEnv.IOP_TLS_CA).toBe(path.join(tlsDir, 'ca.crt'));
  const { IOP_TLS_CA: _ca, ...withoutCa } = agentEnv;
  const untrusting = launch('k8s agent without the CA', 'apps/agent/dist/main.js', [], {
    ...withoutCa,
    IOP_AGENT_ID: 'agent-without-ca',
  });
  procs.push(untrusting);
  const agent = launch('k8s tls agent', 'apps/agent/dist/main.js', [], agentEnv);
  procs.push(agent);
  await agent.ready(30_000);
  await eventually(async () => (await fetch(`${edgeUrl}/readyz`)).ok, 10_000);

  const client = new OpenAI({ apiKey: edgeEnv.IOP_API_KEYS!.split(',')[0]!, baseURL: `${edgeUrl}/v1`, maxRetries: 0 });
  const completion = await client.chat.completions.create({
    model: 'sim-model',
    messages: [{ role: 'user', content: 'hi' }],
  });
  expect(completion.usage?.completion_tokens).toBe(5);
  // The agent without the CA rejects the self-signed certificate: it never registers, and says why.
  const agents = (await (await fetch(`${edgeUrl}/readyz`)).json()) as { agents: number };
  expect(agents.agents).toBe(1);
  await eventually(
    () =>
      untrusting.lines.some((line) => line.msg === 'edge connection lost' && line.error === 'self-signed certificate'),
    10_000,
  );
}, 60_000);
