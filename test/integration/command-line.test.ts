/**
 * The commands as an operator meets them: `--version` on every binary (bin shims), exit 2 naming
 * the unknown option on bad usage everywhere, an edge whose data directory is not writable says
 * which directory and which setting, and an agent whose model download cannot reach its host
 * fails within seconds saying what to do.
 */
import { execFile, spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { API_KEY, JOIN_TOKEN, ROOT } from './harness';

const run = promisify(execFile);
const BINS = {
  'iop-edge': 'apps/edge/bin/iop-edge.js',
  'iop-agent': 'apps/agent/bin/iop-agent.js',
  'iop-sim': 'apps/sim/bin/iop-sim.js',
  'iop-bench': 'apps/bench/bin/iop-bench.js',
};
const quiet = { ...process.env, IOP_LOG_LEVEL: 'silent' };

async function failure(
  args: string[],
  env: NodeJS.ProcessEnv = quiet,
  timeout = 20_000,
): Promise<{ code: number; stderr: string }> {
  const result = await run(process.execPath, args, { env, timeout }).then(
    () => ({ code: 0, stderr: '' }),
    (error: { code: number; stderr: string }) => error,
  );
  return { code: result.code, stderr: result.stderr };
}

describe.each(Object.entries(BINS))('%s', (name, bin) => {
  it('prints its version and exits 0', async () => {
    const { stdout } = await run(process.execPath, [path.join(ROOT, bin), '--version']);
    expect(stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
  });

  it('exits 2 on an unknown option and names it', async () => {
    // iop-bench checks its required options first: give them.
    const required = name === 'iop-bench' ? ['--url', 'http://127.0.0.1:1', '--model', 'm'] : [];
    const result = await failure([path.join(ROOT, bin), ...required, '--no-such-flag']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--no-such-flag');
    // No stack trace (a frame: ` at fn (/file.js:1:2)`, ` at /file.js:1:2`, ` at node:…`); wrapped help text may start
    // a line with "at".
    expect(result.stderr).not.toMatch(/\n\s+at (\S+ \(.*:\d+:\d+\)|\S+:\d+:\d+|node:)/);
  });
});

it('iop-edge exits 2 on an invalid setting and names the field', async () => {
  const result = await failure([
    path.join(ROOT, BINS['iop-edge']),
    '--port',
    '0',
    '--tunnel-port',
    '0',
    '--api-keys',
    'short',
  ]);
  expect(result.code).toBe(2);
  expect(result.stderr).toContain('apiKeys[0] must NOT have fewer than 8 characters (from --api-keys)');
});

it('a YAML config file with several problems: exit 2, one message naming each by its path and source', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'iop-yaml-'));
  const edgeFile = path.join(dir, 'edge.yaml');
  writeFileSync(
    edgeFile,
    [
      'port: 70000',
      'gate:',
      '  models:',
      '    qwen3:',
      '      filters: [reasoning, nope]',
      'pool:',
      '  modelGroups:',
      '    - name: g',
      '',
    ].join('\n'),
  );
  const edge = await failure([path.join(ROOT, BINS['iop-edge']), '--config', edgeFile], {
    ...quiet,
    IOP_TUNNEL_PORT: '99999',
  });
  expect(edge.code).toBe(2);
  expect(edge.stderr).toContain('port must be <= 65535;');
  expect(edge.stderr).toContain('tunnel.port must be <= 65535 (from IOP_TUNNEL_PORT)');
  expect(edge.stderr).toContain('gate.models.qwen3.filters[1] must be one of');
  expect(edge.stderr).toContain("pool.modelGroups[0] must have required property 'targets'");
  const heap = await failure([
    path.join(ROOT, BINS['iop-edge']),
    '--port',
    '0',
    '--tunnel-port',
    '0',
    '--heap-growth-percent',
    '500',
  ]);
  expect(heap.code).toBe(2);
  expect(heap.stderr.trim()).toBe('invalid edge config: heapGrowthPercent must be <= 400 (from --heap-growth-percent)');
  const agentFile = path.join(dir, 'agent.yml');
  writeFileSync(agentFile, 'edgeUrls: [grpc://edge:8081]\nmaxConcurrency: 0\nlabels: { gpu: l4 }\n');
  const agent = await failure([path.join(ROOT, BINS['iop-agent']), '--config', agentFile, '--gpu', 'tpu'], {
    IOP_HEAP_GROWTH_PERCENT: '-1',
  });
  expect(agent.code).toBe(2);
  expect(agent.stderr.trim()).toBe(
    'iop-agent: invalid agent options: edgeUrls[0] must match pattern "^https?://"; gpu must be one of "auto", "none", "cuda", "vulkan", "metal" (from --gpu); maxConcurrency must be >= 1; heapGrowthPercent must be >= 0 (from IOP_HEAP_GROWTH_PERCENT)',
  );
});

it('iop-agent exits 2 on an invalid option value and names the flag and its limits', async () => {
  const result = await failure([
    path.join(ROOT, BINS['iop-agent']),
    '--backend',
    'openai',
    '--backend-url',
    'http://127.0.0.1:1',
    '--max-concurrency',
    '0',
  ]);
  expect(result.code).toBe(2);
  expect(result.stderr.trim()).toBe(
    'iop-agent: invalid agent options: maxConcurrency must be >= 1 (from --max-concurrency)',
  );
});

it('an edge whose data directory is not writable names the directory and IOP_DATA_DIR, exit 1', async () => {
  if (process.getuid?.() === 0) {
    // root writes anywhere: a path below a regular file cannot be created by anyone.
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'iop-data-')), 'not-a-dir');
    await run('touch', [file]);
    const result = await failure(
      [
        path.join(ROOT, BINS['iop-edge']),
        '--port',
        '0',
        '--tunnel-port',
        '0',
        '--api-keys',
        API_KEY,
        '--join-tokens',
        JOIN_TOKEN,
      ],
      {
        ...quiet,
        IOP_DATA_DIR: path.join(file, 'data'),
      },
    );
    expect(result.code).toBe(1);
    expect(result.stderr.trim()).toMatch(
      new RegExp(
        `^cannot open the Responses store in ${path.join(file, 'data').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: .+; make that directory writable by this user \\(uid 0\\), or set IOP_DATA_DIR`,
      ),
    );
    return;
  }
  const dir = path.join(mkdtempSync(path.join(tmpdir(), 'iop-data-')), 'ro');
  mkdirSync(dir);
  chmodSync(dir, 0o500);
  const result = await failure(
    [
      path.join(ROOT, BINS['iop-edge']),
      '--port',
      '0',
      '--tunnel-port',
      '0',
      '--api-keys',
      API_KEY,
      '--join-tokens',
      JOIN_TOKEN,
    ],
    {
      ...quiet,
      IOP_DATA_DIR: dir,
    },
  );
  expect(result.code).toBe(1);
  expect(result.stderr).toContain(`cannot open the Responses store in ${dir}`);
  expect(result.stderr).toContain('IOP_DATA_DIR');
});

it('an edge whose tunnel TLS file cannot be read names the file and its setting, exit 1, no stack trace', async () => {
  const missing = path.join(mkdtempSync(path.join(tmpdir(), 'iop-tls-')), 'edge.crt');
  const result = await failure([
    path.join(ROOT, BINS['iop-edge']),
    '--port',
    '0',
    '--tunnel-port',
    '0',
    '--tls-cert',
    missing,
    '--tls-key',
    missing,
  ]);
  expect(result.code).toBe(1);
  expect(result.stderr.trim()).toBe(
    `cannot read tunnel.tlsCertFile (--tls-cert, IOP_TLS_CERT) ${missing}: ENOENT: no such file or directory, open '${missing}'`,
  );
});

it('an agent whose model download gets no answer fails within seconds, saying what to do', async () => {
  // A host that accepts connections and never answers: as a network that swallows packets.
  const sockets: net.Socket[] = [];
  const blackhole = net.createServer((socket) => void sockets.push(socket));
  await new Promise<void>((resolve) => blackhole.listen(0, '127.0.0.1', resolve));
  const port = (blackhole.address() as net.AddressInfo).port;
  const startedAt = Date.now();
  try {
    const child = spawn(
      process.execPath,
      [
        path.join(ROOT, BINS['iop-agent']),
        '--model',
        `http://127.0.0.1:${port}/models/tiny.gguf`,
        '--edge',
        'http://127.0.0.1:1',
        '--metrics-port',
        'off',
      ],
      {
        env: {
          ...quiet,
          IOP_DOWNLOAD_PROBE_TIMEOUT_MS: '1500',
          IOP_MODEL_CACHE: mkdtempSync(path.join(tmpdir(), 'iop-cache-')),
        },
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code).toBe(1);
    expect(stderr).toContain(
      `cannot download the model http://127.0.0.1:${port}/models/tiny.gguf: http://127.0.0.1:${port} is unreachable (no answer within 1500 ms)`,
    );
    expect(stderr).toContain('--model /path/model.gguf');
    // The probe gives up after 1.5 s, plus 2 s of grace; loading node-llama-cpp takes the rest (generous on a loaded
    // machine).
    expect(Date.now() - startedAt).toBeLessThan(25_000);
  } finally {
    for (const socket of sockets) socket.destroy();
    blackhole.close();
  }
});
