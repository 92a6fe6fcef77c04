/**
 * The Prometheus alert rules (deploy/prometheus/iop-alerts.yml) pass their unit tests
 * (iop-alerts.test.yml: each alert fires with its labels and annotations once its condition held
 * for its `for`, and not before or when healthy) under `promtool test rules`, and the compose
 * files' Prometheus configs pass `promtool check config`. promtool comes from Debian's
 * `prometheus` package, which .ci/run installs: in CI (CI=true) a missing promtool fails the test;
 * elsewhere the test is skipped with the reason printed.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { ROOT } from './harness';

const PROMETHEUS = path.join(ROOT, 'deploy/prometheus');
const available = spawnSync('promtool', ['--version'], { encoding: 'utf8' }).status === 0;
const required = process.env.CI === 'true';
if (!available && !required)
  console.log('alert-rules.test.ts: skipped: promtool is not installed (apt-get install prometheus); CI installs it');

const promtool = (...args: string[]) => spawnSync('promtool', args, { cwd: PROMETHEUS, encoding: 'utf8' });

(available || required ? describe : describe.skip)('Prometheus alert rules and configs (promtool)', () => {
  it('promtool is installed', () => {
    expect(available).toBe(true);
  });

  it('iop-alerts.yml passes its rule unit tests', () => {
    const result = promtool('test', 'rules', 'iop-alerts.test.yml');
    expect(`${result.stdout}${result.stderr}`).toContain('SUCCESS');
    expect(result.status).toBe(0);
  });

  it.each(['prometheus.yml', 'prometheus.multi-edge.yml'])('%s is a valid config whose rule file loads', (file) => {
    const result = promtool('check', 'config', file);
    expect(result.stderr).toBe('');
    expect(result.stdout).toContain(`SUCCESS: ${file} is valid prometheus config file syntax`);
    expect(result.stdout).toMatch(/Checking iop-alerts\.yml\n\s+SUCCESS: \d+ rules found/);
    expect(result.status).toBe(0);
  });
});
