/**
 * Rendering the Kubernetes overlays for tests: scripts/validate-k8s.mjs stages a copy of deploy/
 * with the operator's files written from their examples, a test may change files of that copy,
 * and `kubectl kustomize` renders it. Helpers then read containers, environment and references.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { ROOT } from './harness';

export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  spec?: Record<string, unknown>;
  data?: Record<string, string>;
}

export interface Probe {
  httpGet?: { path: string; port: string | number };
  exec?: { command: string[] };
}

export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: {
    secretKeyRef?: { name: string; key: string; optional?: boolean };
    configMapKeyRef?: { name: string; key: string; optional?: boolean };
    fieldRef?: { fieldPath: string };
  };
}

export interface Container {
  name: string;
  image: string;
  command?: string[];
  args?: string[];
  ports?: Array<{ name: string; containerPort: number }>;
  env?: EnvVar[];
  envFrom?: Array<{ configMapRef?: { name: string }; secretRef?: { name: string } }>;
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  startupProbe?: Probe;
  lifecycle?: { preStop?: { exec?: { command: string[] } } };
  resources?: { limits?: Record<string, string>; requests?: Record<string, string> };
  volumeMounts?: Array<{ name: string; mountPath: string }>;
}

export interface PodSpec {
  containers: Container[];
  terminationGracePeriodSeconds?: number;
  volumes?: Array<{
    name: string;
    persistentVolumeClaim?: { claimName: string };
    secret?: { secretName: string };
    emptyDir?: object;
  }>;
}

/** A staged copy of deploy/ (operator files written), removed by `cleanup`. */
export function stageDeploy(): { deploy: string; cleanup: () => void } {
  const dir = mkdtempSync(path.join(tmpdir(), 'iop-k8s-test-'));
  const staged = spawnSync(process.execPath, [path.join(ROOT, 'scripts/validate-k8s.mjs'), '--stage', dir], {
    encoding: 'utf8',
  });
  if (staged.status !== 0) throw new Error(`staging failed: ${staged.stderr}`);
  return { deploy: path.join(dir, 'deploy'), cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** `kubectl kustomize folder` parsed; throws with kustomize's message when it fails. */
export function kustomize(folder: string): K8sObject[] {
  const result = spawnSync('kubectl', ['kustomize', folder], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (result.status !== 0) throw new Error(`kubectl kustomize ${folder}: ${result.stderr}`);
  return parseAllDocuments(result.stdout).map((document) => document.toJS() as K8sObject);
}

export function find(objects: K8sObject[], kind: string, name: string): K8sObject {
  const found = objects.find((object) => object.kind === kind && object.metadata.name === name);
  if (found === undefined)
    throw new Error(
      `no ${kind}/${name} in ${objects.map((object) => `${object.kind}/${object.metadata.name}`).join(', ')}`,
    );
  return found;
}

/** The object a generated name (`iop-secrets-<hash>`) refers to. */
export function generated(objects: K8sObject[], kind: string, name: string): K8sObject {
  const found = objects.find(
    (object) => object.kind === kind && (object.metadata.name === name || object.metadata.name.startsWith(`${name}-`)),
  );
  if (found === undefined) throw new Error(`no ${kind} ${name}`);
  return found;
}

export function podSpec(workload: K8sObject): PodSpec {
  return (workload.spec as { template: { spec: PodSpec } }).template.spec;
}

export function container(workload: K8sObject, name: string): Container {
  const found = podSpec(workload).containers.find((item) => item.name === name);
  if (found === undefined) throw new Error(`${workload.kind}/${workload.metadata.name} has no container ${name}`);
  return found;
}

/**
 * A container's environment as the kubelet gives it: values, Secret and ConfigMap keys (each must
 * exist in the rendered object it names, by its exact rendered name, unless optional), fields
 * (`podName` for metadata.name), and envFrom ConfigMaps.
 */
export function resolvedEnv(objects: K8sObject[], item: Container, podName = 'iop-pod-0'): Record<string, string> {
  const env: Record<string, string> = {};
  const data = (kind: string, name: string): Record<string, string> => {
    const object = objects.find((candidate) => candidate.kind === kind && candidate.metadata.name === name);
    if (object === undefined) throw new Error(`${item.name}: ${kind} ${name} is not rendered`);
    const values = object.data ?? {};
    return kind === 'Secret'
      ? Object.fromEntries(
          Object.entries(values).map(([key, value]) => [key, Buffer.from(value, 'base64').toString('utf8')]),
        )
      : values;
  };
  for (const source of item.envFrom ?? [])
    if (source.configMapRef !== undefined) Object.assign(env, data('ConfigMap', source.configMapRef.name));
  for (const variable of item.env ?? []) {
    const from = variable.valueFrom;
    let value: string | undefined = variable.value;
    const ref = from?.secretKeyRef ?? from?.configMapKeyRef;
    if (ref !== undefined) {
      const values =
        objects.some((object) => object.metadata.name === ref.name) || !ref.optional
          ? data(from?.secretKeyRef ? 'Secret' : 'ConfigMap', ref.name)
          : {};
      value = values[ref.key];
      if (value === undefined && !ref.optional)
        throw new Error(`${item.name}: ${variable.name} names key ${ref.key}, absent from ${ref.name}`);
    } else if (from?.fieldRef !== undefined) {
      value = from.fieldRef.fieldPath === 'metadata.name' ? podName : undefined;
    }
    if (value !== undefined) env[variable.name] = value;
  }
  return env;
}

/** The container port a probe or Service targets, by name or number. */
export function portNumber(item: Container, port: string | number): number {
  if (typeof port === 'number') return port;
  const found = item.ports?.find((candidate) => candidate.name === port);
  if (found === undefined) throw new Error(`${item.name} has no port ${port}`);
  return found.containerPort;
}
