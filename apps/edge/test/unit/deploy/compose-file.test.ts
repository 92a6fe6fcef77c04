/**
 * The Docker path: docker-compose.yml resolves for both profiles and refuses to start without its
 * secrets (scripts/validate-compose.mjs: Compose interpolation, the compose-spec JSON Schema,
 * profile resolution), and the Dockerfile builds what the compose file expects.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse } from 'yaml';

const ROOT = path.resolve(__dirname, '../../../../..');
const SCRIPT = path.join(ROOT, 'scripts/validate-compose.mjs');
const SECRETS = { IOP_API_KEYS: 'sk-test-00000001', IOP_JOIN_TOKEN: 'join-test-0001' };

function validate(file: string, profiles: string[], env: Record<string, string> = SECRETS) {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('IOP_') && key !== 'COMPOSE_PROFILES'));
  const args = [SCRIPT, '--file', file, '--variables', '/nonexistent', ...profiles.flatMap((profile) => ['--profile', profile])];
  const result = spawnSync(process.execPath, args, { env: { ...clean, ...env }, encoding: 'utf8', cwd: ROOT });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

function tempCompose(text: string): string {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'iop-compose-')), 'docker-compose.yml');
  writeFileSync(file, text);
  return file;
}

const composeFile = path.join(ROOT, 'docker-compose.yml');

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
    const needs: Record<string, number> = { edge: EDGE_DEADLINE_S + 10, agent: AGENT_DEADLINE_S + 5, 'agent-cpu': AGENT_DEADLINE_S + 5 };
    const checked: string[] = [];
    for (const file of [composeFile, path.join(ROOT, 'deploy/compose.multi-edge.yml')]) {
      const services = (parse(readFileSync(file, 'utf8'), { merge: true }) as { services: Record<string, { command?: string[]; stop_grace_period?: string }> }).services;
      for (const [name, service] of Object.entries(services)) {
        const command = service.command?.join(' ') ?? '';
        const role = command.includes('apps/edge/') ? 'edge' : command.includes('apps/agent/') ? (name === 'agent-cpu' ? 'agent-cpu' : 'agent') : undefined;
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

describe('scripts/validate-compose.mjs', () => {
  it('fails a profile whose enabled service depends on a service of another profile, and only that profile', () => {
    const file = tempCompose(['services:', '  gpu-only:', '    image: a', '    profiles: ["gpu"]', '  cpu-agent:', '    image: b', '    profiles: ["cpu"]', '    depends_on: [gpu-only]', ''].join('\n'));
    expect(validate(file, ['gpu']).status).toBe(0);
    const cpu = validate(file, ['cpu']);
    expect(cpu.status).toBe(1);
    expect(cpu.stderr).toContain('services.cpu-agent.depends_on: gpu-only is not enabled by these profiles');
  });

  it('applies the compose-spec schema and interpolation defaults', () => {
    const bad = validate(tempCompose('services:\n  a:\n    image: x\n    restart_policy: always\n'), []);
    expect(bad.status).toBe(1);
    expect(bad.stderr).toContain('restart_policy');
    const file = tempCompose('services:\n  a:\n    image: "x:${TAG:-1}"\n    ports: ["${PORT:-8080}:8080"]\n    volumes: [data:/data]\n');
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
