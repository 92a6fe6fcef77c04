/**
 * The compose files' `monitoring` profile and vLLM settings: the Prometheus of each file scrapes
 * every edge and every agent service of that file, at the port each listens on, under the job
 * names the dashboard and the alert rules query, and loads the alert rules; Grafana is provisioned
 * with that Prometheus as its data source and the dashboard. vLLM's entrypoint passes the tensor
 * parallel size and VLLM_EXTRA_ARGS (run through a real shell, as the container runs it).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { DEFAULT_CONFIG } from '../../../src/config';

const ROOT = path.resolve(__dirname, '../../../../..');
const AGENT_METRICS_PORT = 8082; // the agent command's default metrics port (apps/agent/src/main.ts)

interface Service {
  command?: string[];
  entrypoint?: string[];
  environment?: Record<string, string>;
  profiles?: string[];
  volumes?: string[];
}

interface ScrapeConfig {
  job_name: string;
  dns_sd_configs?: Array<{ names: string[]; port: number; type: string }>;
}

const FILES = ['docker-compose.yml', 'deploy/compose.multi-edge.yml'];

function services(file: string): Record<string, Service> {
  return (parse(readFileSync(path.join(ROOT, file), 'utf8'), { merge: true }) as { services: Record<string, Service> })
    .services;
}

/** The host path of a file a service sees at `inside`, through its bind mounts (relative to the compose file). */
function hostPath(file: string, service: Service, inside: string): string {
  for (const volume of service.volumes ?? []) {
    const [source, target] = volume.split(':') as [string, string];
    if (!source.startsWith('.')) continue;
    if (inside === target || inside.startsWith(`${target}/`))
      return path.join(ROOT, path.dirname(file), source, inside.slice(target.length));
  }
  throw new Error(`${inside} is not mounted from the host`);
}

const roleOf = (service: Service) => {
  const command = service.command?.join(' ') ?? '';
  return command.includes('apps/edge/') ? 'edge' : command.includes('apps/agent/') ? 'agent' : undefined;
};

describe.each(FILES)('%s, profile monitoring', (file) => {
  const all = services(file);
  const prometheus = all.prometheus!;
  const configInside = prometheus
    .command!.find((arg) => arg.startsWith('--config.file='))!
    .slice('--config.file='.length);
  const configFile = hostPath(file, prometheus, configInside);
  const config = parse(readFileSync(configFile, 'utf8')) as { rule_files: string[]; scrape_configs: ScrapeConfig[] };

  it('runs Prometheus and Grafana only in the monitoring profile, published on loopback only', () => {
    for (const name of ['prometheus', 'grafana']) {
      const service = all[name] as Service & { ports: string[] };
      expect(service.profiles).toEqual(['monitoring']);
      for (const port of service.ports) expect(port).toMatch(/^127\.0\.0\.1:/);
    }
  });

  it('scrapes every edge as job iop-edge on its HTTP port and every agent as job iop-agent on its metrics port', () => {
    const targets = (job: string) =>
      config.scrape_configs
        .filter((scrape) => scrape.job_name === job)
        .flatMap((scrape) => scrape.dns_sd_configs ?? [])
        .flatMap((sd) => sd.names.map((name) => `${name}:${sd.port}`))
        .sort();
    const edges = Object.entries(all).filter(([, service]) => roleOf(service) === 'edge');
    const agents = Object.entries(all).filter(([, service]) => roleOf(service) === 'agent');
    expect(edges.length).toBeGreaterThan(0);
    expect(agents.length).toBeGreaterThan(0);
    expect(targets('iop-edge')).toEqual(edges.map(([name]) => `${name}:${DEFAULT_CONFIG.port}`).sort());
    expect(targets('iop-agent')).toEqual(agents.map(([name]) => `${name}:${AGENT_METRICS_PORT}`).sort());
    // An agent's metrics port listens on 127.0.0.1 unless told otherwise: Prometheus needs the network side.
    for (const [name, agent] of agents) expect([name, agent.environment?.IOP_METRICS_HOST]).toEqual([name, '0.0.0.0']);
  });

  it('loads the alert rules the rule tests cover', () => {
    expect(config.rule_files).toEqual(['iop-alerts.yml']);
    expect(path.join(path.dirname(configFile), 'iop-alerts.yml')).toBe(
      path.join(ROOT, 'deploy/prometheus/iop-alerts.yml'),
    );
  });

  it('provisions Grafana with this Prometheus as its default data source and the dashboard', () => {
    const grafana = all.grafana!;
    const provisioning = hostPath(file, grafana, '/etc/grafana/provisioning');
    const datasources = parse(readFileSync(path.join(provisioning, 'datasources/prometheus.yml'), 'utf8')) as {
      datasources: Array<{ type: string; url: string; isDefault: boolean; jsonData: { manageAlerts: boolean } }>;
    };
    expect(datasources.datasources).toEqual([
      expect.objectContaining({ type: 'prometheus', url: 'http://prometheus:9090', isDefault: true }),
    ]);
    expect(datasources.datasources[0]!.jsonData.manageAlerts).toBe(true);
    const providers = parse(readFileSync(path.join(provisioning, 'dashboards/iop.yml'), 'utf8')) as {
      providers: Array<{ type: string; options: { path: string } }>;
    };
    expect(providers.providers).toHaveLength(1);
    const dashboard = hostPath(file, grafana, `${providers.providers[0]!.options.path}/iop-dashboard.json`);
    expect(dashboard).toBe(path.join(ROOT, 'deploy/grafana/iop-dashboard.json'));
    expect(existsSync(dashboard)).toBe(true);
    expect(grafana.environment!.GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH).toBe(
      `${providers.providers[0]!.options.path}/iop-dashboard.json`,
    );
  });
});

describe('docker-compose.yml vLLM settings', () => {
  const vllm = services('docker-compose.yml').vllm!;

  it('passes --tensor-parallel-size from VLLM_TENSOR_PARALLEL_SIZE (default 1) and the extra arguments as separate words', () => {
    expect(vllm.command).toContain('--tensor-parallel-size=${VLLM_TENSOR_PARALLEL_SIZE:-1}');
    expect(vllm.environment!.VLLM_EXTRA_ARGS).toBe('${VLLM_EXTRA_ARGS:-}');
    // The entrypoint as the container runs it (Compose turns `$$` into `$`), with `vllm serve` printing its arguments.
    const [shell, flag, script, name] = vllm.entrypoint!;
    const run = (extra: string) =>
      spawnSync(
        shell!,
        [
          flag!,
          script!.replaceAll('$$', '$').replace('exec vllm serve', "printf '%s\\n'"),
          name!,
          '--model=Qwen/Qwen3-8B',
          '--tensor-parallel-size=4',
        ],
        {
          encoding: 'utf8',
          env: { PATH: process.env.PATH, VLLM_EXTRA_ARGS: extra },
        },
      )
        .stdout.trimEnd()
        .split('\n');
    expect(run('--max-num-seqs=128 --kv-cache-dtype=fp8')).toEqual([
      '--model=Qwen/Qwen3-8B',
      '--tensor-parallel-size=4',
      '--max-num-seqs=128',
      '--kv-cache-dtype=fp8',
    ]);
    expect(run('')).toEqual(['--model=Qwen/Qwen3-8B', '--tensor-parallel-size=4']);
  });
});
