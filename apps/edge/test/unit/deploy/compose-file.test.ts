/**
 * The Docker path: docker-compose.yml resolves for both profiles and refuses to start without its
 * secrets (scripts/validate-compose.mjs: Compose interpolation, the compose-spec JSON Schema,
 * profile resolution), and the Dockerfile builds what the compose file expects. Both compose
 * files: each secret has one variable and no default, the edges' and agents' variables are ones
 * the code reads, agent metrics stay on the host's loopback, and the monitoring profile scrapes
 * every edge and agent of its file (compose-monitoring.test.ts).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse } from 'yaml';
import { AGENT_BINDINGS } from '../../../../agent/src/options-schema';
import { EDGE_BINDINGS } from '../../../src/config-schema';

const ROOT = path.resolve(__dirname, '../../../../..');
const SCRIPT = path.join(ROOT, 'scripts/validate-compose.mjs');
const SECRETS = { IOP_API_KEYS: 'sk-test-00000001', IOP_JOIN_TOKEN: 'join-test-0001' };

function validate(file: string, profiles: string[], env: Record<string, string> = SECRETS) {
  const clean = Object.fromEntries(
    Object.entries(process.env).filter(([key]) => !key.startsWith('IOP_') && key !== 'COMPOSE_PROFILES'),
  );
  const args = [
    SCRIPT,
    '--file',
    file,
    '--variables',
    '/nonexistent',
    ...profiles.flatMap((profile) => ['--profile', profile]),
  ];
  const result = spawnSync(process.execPath, args, { env: { ...clean, ...env }, encoding: 'utf8', cwd: ROOT });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

function tempCompose(text: string): string {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'iop-compose-')), 'docker-compose.yml');
  writeFileSync(file, text);
  return file;
}

const composeFile = path.join(ROOT, 'docker-compose.yml');
const multiEdgeFile = path.join(ROOT, 'deploy/compose.multi-edge.yml');
const MULTI_EDGE_SECRETS = { ...SECRETS, IOP_ADMIN_KEYS: 'admin-test-000000001', POSTGRES_PASSWORD: 'pg-test-0001' };

describe('docker-compose.yml', () => {
  it('resolves the gpu profile to edge, agent and vLLM, and the cpu profile to edge and the CPU agent', () => {
    const gpu = validate(composeFile, ['gpu']);
    expect(gpu.stderr).toBe('');
    expect(gpu.status).toBe(0);
    expect(gpu.stdout).toContain('services agent, edge, vllm');
    const cpu = validate(composeFile, ['cpu']);
    expect(cpu.status).toBe(0);
    expect(cpu.stdout).toContain('services agent-cpu, edge');
  });

  it('refuses to start without the API keys and the join token, naming each variable', () => {
    const result = validate(composeFile, ['cpu'], {});
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('required variable IOP_API_KEYS is missing');
    expect(result.stderr).toContain('required variable IOP_JOIN_TOKEN is missing');
  });

  it('gives the edge and every agent the same join token variable', () => {
    const text = readFileSync(composeFile, 'utf8');
    expect(text).toMatch(/IOP_JOIN_TOKENS: \$\{IOP_JOIN_TOKEN:\?/);
    expect(text.match(/ IOP_JOIN_TOKEN: \$\{IOP_JOIN_TOKEN:\?/g)).toHaveLength(2);
    expect(text).not.toMatch(/change-me/);
  });

  it('has a healthcheck on the edge and on both agents', () => {
    const text = readFileSync(composeFile, 'utf8');
    expect(text.match(/127\.0\.0\.1:8080\/healthz/g)).toHaveLength(1);
    expect(text.match(/127\.0\.0\.1:8082\/readyz/g)).toHaveLength(2);
  });

  it('gives the edge and every agent longer to stop than their shutdown deadlines (Docker SIGKILLs after 10 s by default)', () => {
    // The edge: its deadline, then up to ~7 s of closing (in-band errors, tunnel, the ledger's last write).
    const needs: Record<string, number> = {
      edge: EDGE_DEADLINE_S + 10,
      agent: AGENT_DEADLINE_S + 5,
      'agent-cpu': AGENT_DEADLINE_S + 5,
    };
    const checked: string[] = [];
    for (const file of [composeFile, path.join(ROOT, 'deploy/compose.multi-edge.yml')]) {
      const services = (
        parse(readFileSync(file, 'utf8'), { merge: true }) as {
          services: Record<string, { command?: string[]; stop_grace_period?: string }>;
        }
      ).services;
      for (const [name, service] of Object.entries(services)) {
        const command = service.command?.join(' ') ?? '';
        const role = command.includes('apps/edge/')
          ? 'edge'
          : command.includes('apps/agent/')
            ? name === 'agent-cpu'
              ? 'agent-cpu'
              : 'agent'
            : undefined;
        if (role === undefined) continue;
        checked.push(name);
        expect([file, name, seconds(service.stop_grace_period)]).toEqual([file, name, expect.any(Number)]);
        expect(seconds(service.stop_grace_period)).toBeGreaterThanOrEqual(needs[role]!);
      }
    }
    expect(checked).toEqual(['edge', 'agent', 'agent-cpu', 'edge-1', 'edge-2', 'agent']);
  });
});

const EDGE_DEADLINE_S = 10; // shutdownDeadlineMs's default (apps/edge/src/config-schema.ts)
const AGENT_DEADLINE_S = 30; // the agent's (apps/agent/src/options.ts)

/** A Compose duration such as `30s` or `1m30s`, in seconds; NaN when absent. */
function seconds(duration: string | undefined): number {
  const match = /^(?:(\d+)m)?(?:(\d+)s)?$/.exec(duration ?? '');
  if (match === null || duration === '') return Number.NaN;
  return Number(match[1] ?? 0) * 60 + Number(match[2] ?? 0);
}

describe('deploy/compose.multi-edge.yml', () => {
  it('resolves with its secrets, with and without the monitoring profile', () => {
    const plain = validate(multiEdgeFile, [], MULTI_EDGE_SECRETS);
    expect(plain.stderr).toBe('');
    expect(plain.stdout).toContain('services agent, edge-1, edge-2, lb, postgres, redis');
    expect(validate(multiEdgeFile, ['monitoring'], MULTI_EDGE_SECRETS).stdout).toContain(
      'services agent, edge-1, edge-2, grafana, lb, postgres, prometheus, redis',
    );
  });

  it.each(Object.keys(MULTI_EDGE_SECRETS))('refuses to start without %s, naming it', (secret) => {
    const env: Record<string, string> = { ...MULTI_EDGE_SECRETS };
    delete env[secret];
    const result = validate(multiEdgeFile, [], env);
    expect(result.status).toBe(1);
    expect(result.stderr).toContain(`required variable ${secret} is missing`);
  });

  it('ships no default secret and requires API keys on both edges', () => {
    const text = readFileSync(multiEdgeFile, 'utf8');
    expect(text).not.toMatch(/change-me/);
    const services = (
      parse(text, { merge: true }) as { services: Record<string, { environment?: Record<string, string> }> }
    ).services;
    for (const edge of ['edge-1', 'edge-2'])
      expect(services[edge]!.environment!.IOP_API_KEYS).toMatch(/^\$\{IOP_API_KEYS:\?/);
  });
});

describe('both compose files', () => {
  const files = { [composeFile]: SECRETS, [multiEdgeFile]: MULTI_EDGE_SECRETS };
  type Service = { command?: string[]; environment?: Record<string, string>; ports?: string[]; volumes?: string[] };
  const services = (file: string) =>
    (parse(readFileSync(file, 'utf8'), { merge: true }) as { services: Record<string, Service> }).services;
  const role = (service: Service) =>
    service.command?.join(' ').includes('apps/edge/')
      ? 'edge'
      : service.command?.join(' ').includes('apps/agent/')
        ? 'agent'
        : undefined;

  it('give each secret one variable: the edges’ IOP_JOIN_TOKENS and the agents’ IOP_JOIN_TOKEN are both IOP_JOIN_TOKEN', () => {
    for (const file of Object.keys(files)) {
      const text = readFileSync(file, 'utf8');
      expect(text).not.toMatch(/\$\{IOP_JOIN_TOKENS/);
      expect(text).not.toMatch(/\$\{IOP_ADMIN_KEY[:}]/);
      for (const [name, service] of Object.entries(services(file))) {
        if (role(service) === 'edge')
          expect([name, service.environment!.IOP_JOIN_TOKENS]).toEqual([
            name,
            expect.stringMatching(/^\$\{IOP_JOIN_TOKEN:\?/),
          ]);
        if (role(service) === 'agent')
          expect([name, service.environment!.IOP_JOIN_TOKEN]).toEqual([
            name,
            expect.stringMatching(/^\$\{IOP_JOIN_TOKEN:\?/),
          ]);
      }
    }
  });

  it('set only variables the edge and the agent read (their config schemas’ bindings)', () => {
    const names = (bindings: ReadonlyArray<{ env: string; aliases: ReadonlyArray<{ env?: string }> }>) =>
      new Set(bindings.flatMap((binding) => [binding.env, ...binding.aliases.map((alias) => alias.env)]));
    const known = { edge: names(EDGE_BINDINGS), agent: names(AGENT_BINDINGS) };
    const checked: string[] = [];
    for (const file of Object.keys(files))
      for (const [name, service] of Object.entries(services(file))) {
        const kind = role(service);
        if (kind === undefined) continue;
        for (const variable of Object.keys(service.environment ?? {}).filter((key) => key.startsWith('IOP_'))) {
          checked.push(variable);
          expect([name, variable, known[kind].has(variable)]).toEqual([name, variable, true]);
        }
      }
    expect(checked).toEqual(
      expect.arrayContaining(['IOP_TUNNEL_TLS_CERT_FILE', 'IOP_TUNNEL_TLS_KEY_FILE', 'IOP_TLS_CA', 'IOP_METRICS_HOST']),
    );
  });

  it('publish every agent’s /metrics port on 127.0.0.1 by default, and mount the tunnel TLS folder in every edge and agent', () => {
    for (const file of Object.keys(files))
      for (const [name, service] of Object.entries(services(file))) {
        if (role(service) === undefined) continue;
        expect([name, service.volumes]).toEqual([
          name,
          expect.arrayContaining([
            expect.stringMatching(/^\$\{IOP_TUNNEL_TLS_DIR:-\.\/(deploy\/)?tunnel-tls\}:\/etc\/iop\/tunnel-tls:ro$/),
          ]),
        ]);
        if (role(service) === 'agent')
          for (const port of service.ports ?? [])
            expect([name, port]).toEqual([
              name,
              '${IOP_AGENT_METRICS_BIND:-127.0.0.1}:${IOP_AGENT_METRICS_PORT:-8082}:8082',
            ]);
      }
  });
});

describe('scripts/validate-compose.mjs', () => {
  it('fails a profile whose enabled service depends on a service of another profile, and only that profile', () => {
    const file = tempCompose(
      [
        'services:',
        '  gpu-only:',
        '    image: a',
        '    profiles: ["gpu"]',
        '  cpu-agent:',
        '    image: b',
        '    profiles: ["cpu"]',
        '    depends_on: [gpu-only]',
        '',
      ].join('\n'),
    );
    expect(validate(file, ['gpu']).status).toBe(0);
    const cpu = validate(file, ['cpu']);
    expect(cpu.status).toBe(1);
    expect(cpu.stderr).toContain('services.cpu-agent.depends_on: gpu-only is not enabled by these profiles');
  });

  it('applies the compose-spec schema and interpolation defaults', () => {
    const bad = validate(tempCompose('services:\n  a:\n    image: x\n    restart_policy: always\n'), []);
    expect(bad.status).toBe(1);
    expect(bad.stderr).toContain('restart_policy');
    const file = tempCompose(
      'services:\n  a:\n    image: "x:${TAG:-1}"\n    ports: ["${PORT:-8080}:8080"]\n    volumes: [data:/data]\n',
    );
    const undeclared = validate(file, []);
    expect(undeclared.status).toBe(1);
    expect(undeclared.stderr).toContain('named volume data is not declared');
  });

  it('exits 2 naming an unknown option', () => {
    const result = spawnSync(process.execPath, [SCRIPT, '--profiles', 'cpu'], { encoding: 'utf8' });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain("'--profiles'");
  });
});

describe('Dockerfile', () => {
  const text = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
  it('builds on Node 22 with npm ci and runs unprivileged with a data directory it owns', () => {
    expect(text.match(/^FROM node:22-/gm)).toHaveLength(2);
    expect(text).toMatch(/RUN npm ci /);
    expect(text).not.toMatch(/npm install/);
    expect(text).toMatch(/mkdir -p \/data .*chown node:node \/data/);
    expect(text).toMatch(/^USER node$/m);
    expect(text).toMatch(/^ENV IOP_DATA_DIR=\/data$/m);
  });
});
