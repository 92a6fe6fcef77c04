/**
 * The Kubernetes overlays (deploy/k8s) match the code they run: every overlay renders, and for each
 * the edge's and the agent's commands, IOP_* variables, ports, probe paths and secret references
 * are read the way the processes read them (the config schemas' bindings, `resolveConfig`,
 * `resolveAgentOptions`); a GPU pod asks for as many GPUs as vLLM's tensor parallelism and lets the
 * agent drain before vLLM stops. The rendered edge and agent run for real in k8s-run.test.ts.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { layerFromEnv } from '@iop/core';
import { EDGE_BINDINGS } from '../../apps/edge/src/config-schema';
import { configFromEnv, configFromFlags, resolveConfig } from '../../apps/edge/src/config';
import { resolveAgentOptions } from '../../apps/agent/src/options';
import { AGENT_BINDINGS } from '../../apps/agent/src/options-schema';
import { ROOT } from './harness';
import {
  container,
  find,
  generated,
  kustomize,
  podSpec,
  portNumber,
  resolvedEnv,
  stageDeploy,
  type Container,
  type K8sObject,
} from './k8s-support';

let deploy: string;
let cleanup: () => void;
const rendered: Record<string, K8sObject[]> = {};
const OVERLAYS = ['single-edge', 'several-edges', 'gpu-agent'];

beforeAll(() => {
  ({ deploy, cleanup } = stageDeploy());
  for (const name of OVERLAYS) rendered[name] = kustomize(path.join(deploy, 'k8s/overlays', name));
});

afterAll(() => cleanup());

const edgeEnvNames = new Set(
  EDGE_BINDINGS.flatMap((binding) => [binding.env, ...binding.aliases.map((alias) => alias.env)]).filter(Boolean),
);
const agentEnvNames = new Set(
  AGENT_BINDINGS.flatMap((binding) => [binding.env, ...binding.aliases.map((alias) => alias.env)]).filter(Boolean),
);

/** The edge workload of an overlay (a Deployment, or the several-edges StatefulSet). */
function edgeWorkload(objects: K8sObject[]): K8sObject {
  const workloads = objects.filter(
    (object) => (object.kind === 'Deployment' || object.kind === 'StatefulSet') && object.metadata.name === 'iop-edge',
  );
  expect(workloads).toHaveLength(1);
  return workloads[0]!;
}

/** `--flag value` pairs of a command after its script. */
function flagPairs(command: string[]): Map<string, string> {
  const pairs = new Map<string, string>();
  for (let index = 2; index < command.length; index += 2) pairs.set(command[index]!, command[index + 1]!);
  return pairs;
}

/** The edge's config as its container would run it. */
function edgeConfig(objects: K8sObject[], edge: Container) {
  return resolveConfig(configFromEnv(resolvedEnv(objects, edge)), configFromFlags(flagPairs(edge.command!)));
}

function agentOptions(objects: K8sObject[], agent: Container) {
  const layer = layerFromEnv(AGENT_BINDINGS, resolvedEnv(objects, agent));
  expect(layer.problems).toEqual([]);
  return resolveAgentOptions(layer.values);
}

describe.each(['single-edge', 'several-edges'])('overlay %s: the edge', (name) => {
  it('runs the edge command with variables the edge reads, secrets from the generated Secrets', () => {
    const objects = rendered[name]!;
    const edge = container(edgeWorkload(objects), 'edge');
    expect(edge.command!.slice(0, 2)).toEqual(['node', 'apps/edge/dist/main.js']);
    for (const variable of edge.env ?? [])
      expect([variable.name, edgeEnvNames.has(variable.name)]).toEqual([variable.name, true]);
    const secrets = resolvedEnv(objects, edge);
    const config = edgeConfig(objects, edge);
    expect(config.apiKeys).toEqual(secrets.IOP_API_KEYS!.split(','));
    expect(config.adminKeys).toEqual(secrets.IOP_ADMIN_KEYS!.split(','));
    expect(config.joinTokens).toEqual([generatedValue(objects, 'iop-secrets', 'IOP_JOIN_TOKEN')]);
    // The API keys, admin key and join token come from the Secret, never from a literal value.
    for (const secret of ['IOP_API_KEYS', 'IOP_ADMIN_KEYS', 'IOP_JOIN_TOKENS'])
      expect(edge.env!.find((variable) => variable.name === secret)?.valueFrom?.secretKeyRef?.name).toMatch(
        /^iop-secrets-/,
      );
    expect(config.host).toBe('0.0.0.0');
    expect(config.tunnel.host).toBe('0.0.0.0');
  });

  it('names the ports the edge listens on, probes its /healthz and /readyz, and stops within its grace period', () => {
    const objects = rendered[name]!;
    const workload = edgeWorkload(objects);
    const edge = container(workload, 'edge');
    const config = edgeConfig(objects, edge);
    expect(portNumber(edge, 'http')).toBe(config.port);
    expect(portNumber(edge, 'tunnel')).toBe(config.tunnel.port);
    expect(edge.livenessProbe?.httpGet).toEqual({ path: '/healthz', port: 'http' });
    expect(edge.readinessProbe?.httpGet).toEqual({ path: '/readyz', port: 'http' });
    expect(edge.startupProbe?.httpGet).toEqual({ path: '/healthz', port: 'http' });
    // The shutdown deadline, then up to ~7 s of closing (in-band errors, tunnel, the ledger's last write).
    expect(podSpec(workload).terminationGracePeriodSeconds).toBeGreaterThanOrEqual(
      config.shutdownDeadlineMs / 1000 + 10,
    );
    expect(config.responsesStore.dataDir).toBe('/data');
    expect(edge.volumeMounts).toContainEqual({ name: 'data', mountPath: config.responsesStore.dataDir });
  });

  it('serves clients on the `iop-edge` Service and agents on the headless `iop-edge-tunnel`, not-ready edges included', () => {
    const objects = rendered[name]!;
    const edge = container(edgeWorkload(objects), 'edge');
    const http = find(objects, 'Service', 'iop-edge').spec as { ports: Array<{ name: string; targetPort: string }> };
    expect(http.ports.map((port) => portNumber(edge, port.targetPort))).toEqual([edgeConfig(objects, edge).port]);
    const tunnel = find(objects, 'Service', 'iop-edge-tunnel').spec as {
      clusterIP: string;
      publishNotReadyAddresses: boolean;
      ports: Array<{ port: number; targetPort: string }>;
    };
    expect(tunnel).toMatchObject({ clusterIP: 'None', publishNotReadyAddresses: true });
    expect(tunnel.ports.map((port) => [port.port, portNumber(edge, port.targetPort)])).toEqual([
      [8081, edgeConfig(objects, edge).tunnel.port],
    ]);
    const monitor = find(objects, 'ServiceMonitor', 'iop-edge').spec as {
      endpoints: Array<{ port: string; path: string }>;
    };
    expect(monitor.endpoints).toEqual([expect.objectContaining({ port: 'http', path: '/metrics' })]);
  });
});

/** A key of a generated Secret, decoded. */
function generatedValue(objects: K8sObject[], secret: string, key: string): string {
  return Buffer.from(generated(objects, 'Secret', secret).data![key]!, 'base64').toString('utf8');
}

describe('overlay single-edge', () => {
  it('keeps the SQLite data directory on the PersistentVolumeClaim, one edge at a time, no autoscaler', () => {
    const objects = rendered['single-edge']!;
    const workload = find(objects, 'Deployment', 'iop-edge');
    expect((workload.spec as { strategy: unknown }).strategy).toEqual({ type: 'Recreate' });
    expect((workload.spec as { replicas: number }).replicas).toBe(1);
    expect(podSpec(workload).volumes).toContainEqual({
      name: 'data',
      persistentVolumeClaim: { claimName: 'iop-edge-data' },
    });
    find(objects, 'PersistentVolumeClaim', 'iop-edge-data');
    expect(objects.filter((object) => object.kind === 'HorizontalPodAutoscaler')).toEqual([]);
    const edgeConfigOf = edgeConfig(objects, container(workload, 'edge'));
    expect(edgeConfigOf.storage.sql.kind).toBe('sqlite');
  });
});

describe('overlay several-edges', () => {
  it('runs the edges as a StatefulSet the HPA scales, on PostgreSQL and Redis from the Secret iop-storage', () => {
    const objects = rendered['several-edges']!;
    expect(objects.some((object) => object.kind === 'Deployment' && object.metadata.name === 'iop-edge')).toBe(false);
    const workload = find(objects, 'StatefulSet', 'iop-edge');
    expect((workload.spec as { serviceName: string }).serviceName).toBe('iop-edge-tunnel');
    const hpa = find(objects, 'HorizontalPodAutoscaler', 'iop-edge').spec as {
      scaleTargetRef: unknown;
      minReplicas: number;
      maxReplicas: number;
    };
    expect(hpa.scaleTargetRef).toEqual({ apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'iop-edge' });
    expect(hpa.minReplicas).toBeGreaterThanOrEqual(2);
    const config = edgeConfig(objects, container(workload, 'edge'));
    expect(config.storage.sql).toMatchObject({
      kind: 'postgres',
      url: generatedValue(objects, 'iop-storage', 'IOP_STORAGE_POSTGRES_URL'),
    });
    expect(config.storage.counters).toMatchObject({
      kind: 'redis',
      url: generatedValue(objects, 'iop-storage', 'IOP_STORAGE_REDIS_URL'),
    });
  });

  it('makes every agent dial every edge the HPA may start, by its stable name', () => {
    const objects = rendered['several-edges']!;
    const hpa = find(objects, 'HorizontalPodAutoscaler', 'iop-edge').spec as { maxReplicas: number };
    const tunnelPort = edgeConfig(objects, container(find(objects, 'StatefulSet', 'iop-edge'), 'edge')).tunnel.port;
    const options = agentOptions(objects, container(find(objects, 'Deployment', 'iop-agent-gpu'), 'agent'));
    expect(options.edgeUrls).toEqual(
      Array.from({ length: hpa.maxReplicas }, (_, index) => `http://iop-edge-${index}.iop-edge-tunnel:${tunnelPort}`),
    );
  });
});

describe.each(OVERLAYS)('overlay %s: the GPU agent pod', (name) => {
  it('runs the agent command with variables the agent reads, joined with the edge’s join token', () => {
    const objects = rendered[name]!;
    const agent = container(find(objects, 'Deployment', 'iop-agent-gpu'), 'agent');
    expect(agent.command).toEqual(['node', 'apps/agent/dist/main.js']);
    for (const variable of agent.env ?? [])
      expect([variable.name, agentEnvNames.has(variable.name)]).toEqual([variable.name, true]);
    const options = agentOptions(objects, agent);
    expect(options.joinToken).toBe(generatedValue(objects, 'iop-secrets', 'IOP_JOIN_TOKEN'));
    expect(agent.env!.find((variable) => variable.name === 'IOP_JOIN_TOKEN')?.valueFrom?.secretKeyRef?.key).toBe(
      'IOP_JOIN_TOKEN',
    );
    expect(options.backend).toBe('openai');
    expect(options.agentId).toBe('iop-pod-0'); // the pod's name
    expect(portNumber(agent, 'metrics')).toBe(options.metricsPort);
    expect(agent.readinessProbe?.httpGet).toEqual({ path: '/readyz', port: 'metrics' });
    expect(agent.livenessProbe?.httpGet).toEqual({ path: '/healthz', port: 'metrics' });
    const monitor = find(objects, 'PodMonitor', 'iop-agent').spec as {
      podMetricsEndpoints: Array<{ port: string; path: string }>;
    };
    expect(monitor.podMetricsEndpoints).toEqual([expect.objectContaining({ port: 'metrics', path: '/metrics' })]);
  });

  it('points the agent at vLLM on the pod’s loopback, asks for VLLM_TENSOR_PARALLEL_SIZE GPUs, and drains before vLLM stops', () => {
    const objects = rendered[name]!;
    const workload = find(objects, 'Deployment', 'iop-agent-gpu');
    const vllm = container(workload, 'vllm');
    const script = vllm.command![2]!;
    const options = agentOptions(objects, container(workload, 'agent'));
    const backend = new URL(options.backendUrl!);
    expect(script).toContain(`--host=${backend.hostname} --port=${backend.port}`);
    expect(script).toContain('--tensor-parallel-size="$VLLM_TENSOR_PARALLEL_SIZE"');
    expect(script).toMatch(/ \$VLLM_EXTRA_ARGS$/);
    const settings = resolvedEnv(objects, vllm);
    expect(vllm.resources?.limits?.['nvidia.com/gpu']).toBe(settings.VLLM_TENSOR_PARALLEL_SIZE);
    expect(vllm.resources?.requests?.['nvidia.com/gpu']).toBe(settings.VLLM_TENSOR_PARALLEL_SIZE);
    // The agent's drain deadline, its close, then vLLM's own stop fit in the grace period; the
    // preStop hook waits for the agent's port at most 50 s.
    const grace = podSpec(workload).terminationGracePeriodSeconds!;
    expect(grace).toBeGreaterThanOrEqual(options.shutdownDeadlineMs / 1000 + 15);
    const preStop = vllm.lifecycle!.preStop!.exec!.command.join(' ');
    expect(preStop).toContain(`("127.0.0.1", ${options.metricsPort})`);
    const wait = Number(/time\.time\(\) \+ (\d+)/.exec(preStop)?.[1]);
    expect(wait).toBeGreaterThan(options.shutdownDeadlineMs / 1000);
    expect(wait).toBeLessThan(grace);
  });
});

describe('tensor parallelism and TLS settings', () => {
  it('asks for 4 GPUs when vllm.env says VLLM_TENSOR_PARALLEL_SIZE=4, and passes VLLM_EXTRA_ARGS to vLLM', () => {
    const file = path.join(deploy, 'k8s/overlays/single-edge/vllm.env');
    writeFileSync(
      file,
      'VLLM_MODEL=m\nVLLM_SERVED_MODEL_NAME=m\nVLLM_TENSOR_PARALLEL_SIZE=4\nVLLM_EXTRA_ARGS=--max-num-seqs=128 --kv-cache-dtype=fp8\n',
    );
    const objects = kustomize(path.join(deploy, 'k8s/overlays/single-edge'));
    const vllm = container(find(objects, 'Deployment', 'iop-agent-gpu'), 'vllm');
    expect(vllm.resources?.limits?.['nvidia.com/gpu']).toBe('4');
    expect(resolvedEnv(objects, vllm)).toMatchObject({
      VLLM_TENSOR_PARALLEL_SIZE: '4',
      VLLM_EXTRA_ARGS: '--max-num-seqs=128 --kv-cache-dtype=fp8',
    });
  });

  it('components/tunnel-tls gives the edge its certificate and key and the agent the CA, by the settings each reads', () => {
    const folder = path.join(deploy, 'k8s/overlays/single-edge-tls');
    mkdirSync(folder);
    writeFileSync(
      path.join(folder, 'kustomization.yaml'),
      [
        'apiVersion: kustomize.config.k8s.io/v1beta1',
        'kind: Kustomization',
        'resources: [../single-edge]',
        'components: [../../components/tunnel-tls]',
        '',
      ].join('\n'),
    );
    const objects = kustomize(folder);
    const edgeWorkloadOf = find(objects, 'Deployment', 'iop-edge');
    const config = edgeConfig(objects, container(edgeWorkloadOf, 'edge'));
    expect(config.tunnel).toMatchObject({
      tlsCertFile: '/etc/iop/tunnel-tls/tls.crt',
      tlsKeyFile: '/etc/iop/tunnel-tls/tls.key',
    });
    expect(container(edgeWorkloadOf, 'edge').volumeMounts).toContainEqual(
      expect.objectContaining({ name: 'tunnel-tls', mountPath: '/etc/iop/tunnel-tls' }),
    );
    expect(podSpec(edgeWorkloadOf).volumes).toContainEqual(
      expect.objectContaining({
        name: 'tunnel-tls',
        secret: expect.objectContaining({ secretName: 'iop-tunnel-tls' }),
      }),
    );
    const agentWorkload = find(objects, 'Deployment', 'iop-agent-gpu');
    expect(agentOptions(objects, container(agentWorkload, 'agent')).tlsCa).toBe('/etc/iop/tunnel-tls/ca.crt');
    expect(container(agentWorkload, 'agent').volumeMounts).toContainEqual(
      expect.objectContaining({ name: 'tunnel-tls', mountPath: '/etc/iop/tunnel-tls' }),
    );
    // The agents-only overlay dials over TLS.
    const remote = agentOptions(
      rendered['gpu-agent']!,
      container(find(rendered['gpu-agent']!, 'Deployment', 'iop-agent-gpu'), 'agent'),
    );
    expect(remote.edgeUrls.every((url) => url.startsWith('https://'))).toBe(true);
    expect(remote.tlsCa).toBe('/etc/iop/tunnel-tls/ca.crt');
  });
});

it('the image the manifests run builds the commands they name (Dockerfile)', () => {
  const dockerfile = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
  expect(dockerfile).toMatch(/^CMD \["node", "apps\/edge\/dist\/main.js"/m);
  expect(dockerfile).toMatch(/^USER node$/m);
  expect(existsSync(path.join(ROOT, 'apps/agent/dist/main.js'))).toBe(true);
});

describe('scripts/validate-k8s.mjs', () => {
  const problems = (object: unknown): string[] => {
    const code = `import { schemaProblems } from ${JSON.stringify(path.join(ROOT, 'scripts/validate-k8s.mjs'))}; console.log(JSON.stringify(schemaProblems(${JSON.stringify(object)})));`;
    const result = spawnSync(process.execPath, ['--input-type=module', '-e', code], { encoding: 'utf8' });
    expect(result.stderr).toBe('');
    return JSON.parse(result.stdout) as string[];
  };

  it('passes a rendered object and reports a wrong type, a bad CRD value and a kind without a schema', () => {
    const deployment = find(rendered['single-edge']!, 'Deployment', 'iop-edge');
    expect(problems(deployment)).toEqual([]);
    const broken = JSON.parse(JSON.stringify(deployment)) as K8sObject;
    podSpec(broken).containers[0]!.ports![0]!.containerPort = '8080' as unknown as number;
    expect(problems(broken)).toEqual([expect.stringMatching(/^Deployment\/iop-edge: .*containerPort must be integer/)]);
    const monitor = JSON.parse(JSON.stringify(find(rendered['single-edge']!, 'ServiceMonitor', 'iop-edge'))) as {
      spec: { endpoints: Array<{ interval: string }> };
    };
    monitor.spec.endpoints[0]!.interval = '15 seconds';
    expect(problems(monitor)).toEqual([
      expect.stringMatching(/^ServiceMonitor\/iop-edge: .*interval must match pattern/),
    ]);
    expect(problems({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w' } })).toEqual([
      'Widget/w: no schema for example.com/v1 Widget',
    ]);
  });
});
