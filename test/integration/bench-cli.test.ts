/**
 * `iop-bench` against edge + two agents + sim: `--json` gives the counts, the latency summaries
 * and the per-agent distribution; bad options exit with status 2 and a message.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { API_KEY, ROOT, startAgent, startEdge, startSim, stopAll } from './harness';

const run = promisify(execFile);
const CLI = path.join(ROOT, 'apps/bench/bin/iop-bench.js');

afterAll(stopAll);

describe('iop-bench', () => {
  let url: string;

  beforeAll(async () => {
    const sim = await startSim(['--models', 'sim-model', '--itl-ms', '2']);
    const edge = await startEdge();
    url = edge.url;
    for (const id of ['bench-a', 'bench-b'])
      await startAgent({ tunnelPort: edge.tunnelPort, id, backendUrl: sim.url, models: ['sim-model'] });
  });

  it('closed loop, streaming chat: counts, percentiles and the agent distribution', async () => {
    const { stdout, stderr } = await run(process.execPath, [
      CLI,
      '--url',
      url,
      '--api-key',
      API_KEY,
      '--model',
      'sim-model',
      '--concurrency',
      '4',
      '--requests',
      '40',
      '--prompt-words',
      '10:30',
      '--max-tokens',
      '8',
      '--json',
    ]);
    expect(stderr).toBe('');
    const report = JSON.parse(stdout);
    expect(report.config).toMatchObject({
      dialect: 'chat',
      stream: true,
      mode: { kind: 'closed', concurrency: 4 },
      promptWords: { min: 10, max: 30 },
      maxTokens: { min: 8, max: 8 },
    });
    expect(report.requests).toEqual({ total: 40, ok: 40, failed: 0 });
    expect(report.ttftMs.count).toBe(40);
    expect(report.latencyMs.count).toBe(40);
    expect(report.itlMs.count).toBe(40 * 7);
    for (const summary of [report.ttftMs, report.itlMs, report.latencyMs]) {
      expect(summary.p50).toBeLessThanOrEqual(summary.p90);
      expect(summary.p90).toBeLessThanOrEqual(summary.p99);
      expect(summary.p99).toBeLessThanOrEqual(summary.max);
    }
    expect(report.outputTokensPerSecond).toBeGreaterThan(0);
    expect(report.errors).toEqual({});
    expect(Object.keys(report.agents).sort()).toEqual(['bench-a', 'bench-b']);
    expect(report.agents['bench-a'] + report.agents['bench-b']).toBe(40);
  });

  it('open loop, non-stream Anthropic Messages; failures are classed (401 with a wrong key)', async () => {
    const ok = JSON.parse(
      (
        await run(process.execPath, [
          CLI,
          '--url',
          url,
          '--api-key',
          API_KEY,
          '--model',
          'sim-model',
          '--dialect',
          'messages',
          '--rate',
          '40',
          '--requests',
          '12',
          '--no-stream',
          '--max-tokens',
          '4',
          '--json',
        ])
      ).stdout,
    );
    expect(ok.config).toMatchObject({ dialect: 'messages', stream: false, mode: { kind: 'open', ratePerSecond: 40 } });
    expect(ok.requests).toEqual({ total: 12, ok: 12, failed: 0 });
    expect(ok.itlMs.count).toBe(0);
    expect(ok.itlMs.p50).toBeNull();
    const failed = await run(process.execPath, [
      CLI,
      '--url',
      url,
      '--api-key',
      'sk-wrong-key-00000',
      '--model',
      'sim-model',
      '--requests',
      '3',
      '--json',
    ]).catch((error: { code: number; stdout: string }) => error);
    expect((failed as { code: number }).code).toBe(1);
    const report = JSON.parse((failed as { stdout: string }).stdout);
    expect(report.errors).toEqual({ http_4xx: 3 });
    expect(report.errorStatuses).toEqual({ '401': 3 });
  });

  it('prints a readable table; bad options exit 2 naming the option', async () => {
    const { stdout } = await run(process.execPath, [
      CLI,
      '--url',
      url,
      '--api-key',
      API_KEY,
      '--model',
      'sim-model',
      '--requests',
      '6',
      '--max-tokens',
      '4',
    ]);
    expect(stdout).toMatch(/^requests {2}6 \(ok 6, failed 0\)/);
    expect(stdout).toMatch(/\nTTFT +[\d.]+ +[\d.]+ +[\d.]+/);
    expect(stdout).toContain('errors  none');
    expect(stdout).toMatch(/\nagent +requests +share\n/);
    const bad = (await run(process.execPath, [CLI, '--url', url, '--model', 'm', '--prompt-words', '9:3']).catch(
      (error: unknown) => error,
    )) as {
      code: number;
      stderr: string;
    };
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("option '--prompt-words <range>' argument '9:3' is invalid. expected 1 <= min <= max");
    const both = (await run(process.execPath, [
      CLI,
      '--url',
      url,
      '--model',
      'm',
      '--rate',
      '1',
      '--concurrency',
      '2',
    ]).catch((error: unknown) => error)) as {
      code: number;
      stderr: string;
    };
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('--concurrency and --rate exclude each other');
  });
});
