// Starts the main job on one machine: builds, then an edge, a node agent running the embedded
// llama.cpp backend with the default model, then sends a real request through them (curl-style
// HTTP and the official openai SDK) and keeps serving until Ctrl-C.
//
// Usage: npm start -- [--port 8080] [--tunnel-port 8081] [--model path.gguf|hf:…] [--once] [--skip-build]
// Flags override the environment: IOP_PORT, IOP_TUNNEL_PORT, IOP_MODEL, IOP_API_KEYS (default a
// local demo key), IOP_JOIN_TOKENS. Bad usage exits 2 naming the option, as every iop command does.
import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import path from 'node:path';
import readline from 'node:readline';

const USAGE =
  'usage: npm start -- [--port N] [--tunnel-port N] [--model path.gguf|hf:owner/repo/file.gguf] [--once] [--skip-build]';
let flags;
try {
  ({ values: flags } = parseArgs({
    options: {
      port: { type: 'string' },
      'tunnel-port': { type: 'string' },
      model: { type: 'string' },
      once: { type: 'boolean' },
      'skip-build': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  }));
} catch (error) {
  console.error(`start: ${error.message}\n${USAGE}`);
  process.exit(2);
}
if (flags.help) {
  console.log(USAGE);
  process.exit(0);
}
for (const name of ['port', 'tunnel-port']) {
  if (flags[name] !== undefined && !/^\d{1,5}$/.test(flags[name])) {
    console.error(`start: --${name} must be a port number, got ${JSON.stringify(flags[name])}\n${USAGE}`);
    process.exit(2);
  }
}

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const once = flags.once === true;
const port = flags.port ?? process.env.IOP_PORT ?? '8080';
const tunnelPort = flags['tunnel-port'] ?? process.env.IOP_TUNNEL_PORT ?? '8081';
const modelFlag = flags.model ?? process.env.IOP_MODEL;
const apiKeys = process.env.IOP_API_KEYS ?? 'sk-iop-local-demo';
const apiKey = apiKeys.split(',')[0]; // the demo's own requests use the first key
const joinTokens = process.env.IOP_JOIN_TOKENS ?? 'iop-local-join-token';
const joinToken = joinTokens.split(',')[0];
const children = [];

if (flags['skip-build'] !== true) {
  console.log('[1/4] building (turbo; cached packages are skipped)…');
  const started = Date.now();
  const build = spawnSync(
    process.execPath,
    [path.join(root, 'node_modules/turbo/bin/turbo'), 'run', 'build', '--output-logs=errors-only'],
    {
      cwd: root,
      stdio: 'inherit',
    },
  );
  if (build.status !== 0) {
    console.error(`start: the build failed (exit ${build.status}); see the errors above`);
    process.exit(1);
  }
  console.log(`      built in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}
const { default: OpenAI } = await import('openai');

// Resolves with the process's readiness line, {"event":"ready",…} (edge: listening; agent:
// registered with the edge), printed whatever the log level.
function start(name, script, args, env) {
  const child = spawn(process.execPath, [path.join(root, script), ...args], {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(child);
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${name} exited with code ${code}`)));
    readline.createInterface({ input: child.stdout }).on('line', (line) => {
      let json;
      try {
        json = JSON.parse(line);
      } catch {
        json = { msg: line };
      }
      if (json.event === 'ready') return resolve(json);
      if (json.level >= 40 || process.env.IOP_VERBOSE)
        console.log(`[${name}] ${json.msg}${json.err ? `: ${json.err.message}` : ''}`);
      if (json.msg === 'agent starting')
        console.log(
          `      agent: ${json.backend} backend, model ${json.modelFile ?? json.model ?? '?'}, ${json.threads ?? '?'} threads, GPU ${json.gpu === false ? 'none' : json.gpu}, max concurrency ${json.maxConcurrency}, /healthz and /metrics on :${json.metricsPort ?? '-'}`,
        );
    });
  });
}

function stopAll() {
  for (const child of children) child.kill('SIGTERM');
}
process.on('SIGINT', () => {
  stopAll();
  process.exit(0);
});

try {
  console.log('[2/4] starting the edge…');
  await start('edge', 'apps/edge/dist/main.js', ['--port', port, '--tunnel-port', tunnelPort], {
    IOP_API_KEYS: apiKeys,
    IOP_JOIN_TOKENS: joinTokens,
    IOP_LOG_FORMAT: 'json',
  });
  console.log(`      edge: http://127.0.0.1:${port}/v1 (tunnel :${tunnelPort})`);
  const args = [
    '--edge',
    `http://127.0.0.1:${tunnelPort}`,
    '--join-token',
    joinToken,
    '--agent-id',
    'local-agent',
    '--backend',
    'llamacpp',
  ];
  if (modelFlag) args.push('--model', modelFlag);
  console.log(
    `[3/4] starting the agent (loading ${modelFlag ?? 'the default model stories260K.gguf'}; a model not found locally is downloaded once)…`,
  );
  await start('agent', 'apps/agent/dist/main.js', args, { IOP_LOG_FORMAT: 'json' });
  console.log('[4/4] sending a request through the edge…');
  const models = await (
    await fetch(`http://127.0.0.1:${port}/v1/models`, { headers: { authorization: `Bearer ${apiKey}` } })
  ).json();
  const model = models.data[0]?.id;
  console.log(`      agent registered, serving: ${models.data.map((m) => m.id).join(', ')}`);

  console.log(
    `\n$ curl http://127.0.0.1:${port}/v1/chat/completions -H 'authorization: Bearer ${apiKey}' -H 'content-type: application/json' \\\n    -d '{"model":"${model}","messages":[{"role":"user","content":"Once upon a time"}],"max_tokens":48}'`,
  );
  const response = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'Once upon a time' }], max_tokens: 48 }),
  });
  const completion = await response.json();
  console.log(JSON.stringify(completion, null, 2));

  console.log('\nopenai SDK, streaming:');
  const client = new OpenAI({ apiKey, baseURL: `http://127.0.0.1:${port}/v1` });
  const stream = await client.chat.completions.create({
    model,
    messages: [{ role: 'user', content: 'The little dog' }],
    max_tokens: 48,
    stream: true,
    stream_options: { include_usage: true },
  });
  for await (const chunk of stream) {
    process.stdout.write(chunk.choices[0]?.delta.content ?? '');
    if (chunk.usage)
      console.log(`\n[usage] prompt ${chunk.usage.prompt_tokens}, completion ${chunk.usage.completion_tokens} tokens`);
  }
  if (once) {
    stopAll();
    process.exit(0);
  }
  console.log(
    `\niop is running: OPENAI_BASE_URL=http://127.0.0.1:${port}/v1 OPENAI_API_KEY=${apiKey}. Ctrl-C stops it.`,
  );
} catch (error) {
  console.error(`start failed: ${error.message}`);
  stopAll();
  process.exit(1);
}
