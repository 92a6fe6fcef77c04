// Starts the main job on one machine: an edge, a node agent running the embedded llama.cpp
// backend with the default model, then sends a real request through them (curl-style HTTP and
// the official openai SDK) and keeps serving until Ctrl-C. `--once` exits after the demo.
//
// Environment: IOP_PORT (default 8080), IOP_TUNNEL_PORT (8081), IOP_API_KEYS (default a local
// demo key), IOP_MODEL (a GGUF path or hf: URI; default stories260K.gguf from the models path).
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import readline from 'node:readline';
import OpenAI from 'openai';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const once = process.argv.includes('--once');
const port = process.env.IOP_PORT ?? '8080';
const tunnelPort = process.env.IOP_TUNNEL_PORT ?? '8081';
const apiKeys = process.env.IOP_API_KEYS ?? 'sk-iop-local-demo';
const apiKey = apiKeys.split(',')[0]; // the demo's own requests use the first key
const joinTokens = process.env.IOP_JOIN_TOKENS ?? 'iop-local-join-token';
const joinToken = joinTokens.split(',')[0];
const children = [];

function start(name, script, args, env, readyMessage) {
  const child = spawn(process.execPath, [path.join(root, script), ...args], { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
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
      if (json.level >= 40 || process.env.IOP_VERBOSE) console.log(`[${name}] ${json.msg}${json.err ? `: ${json.err.message}` : ''}`);
      if (json.msg === readyMessage) resolve(json);
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
  await start('edge', 'apps/edge/dist/main.js', ['--port', port, '--tunnel-port', tunnelPort], { IOP_API_KEYS: apiKeys, IOP_JOIN_TOKENS: joinTokens }, 'edge listening');
  console.log(`edge: http://127.0.0.1:${port}/v1 (tunnel :${tunnelPort})`);
  const args = ['--edge', `http://127.0.0.1:${tunnelPort}`, '--join-token', joinToken, '--agent-id', 'local-agent', '--backend', 'llamacpp'];
  if (process.env.IOP_MODEL) args.push('--model', process.env.IOP_MODEL);
  const registered = await start('agent', 'apps/agent/dist/main.js', args, {}, 'registered');
  const models = await (await fetch(`http://127.0.0.1:${port}/v1/models`, { headers: { authorization: `Bearer ${apiKey}` } })).json();
  const model = models.data[0]?.id;
  console.log(`agent registered (session ${registered.sessionId ?? '?'}), serving: ${models.data.map((m) => m.id).join(', ')}`);

  console.log(`\n$ curl http://127.0.0.1:${port}/v1/chat/completions -H 'authorization: Bearer ${apiKey}' -H 'content-type: application/json' \\\n    -d '{"model":"${model}","messages":[{"role":"user","content":"Once upon a time"}],"max_tokens":48}'`);
  const response = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'Once upon a time' }], max_tokens: 48 }),
  });
  const completion = await response.json();
  console.log(JSON.stringify(completion, null, 2));

  console.log('\nopenai SDK, streaming:');
  const client = new OpenAI({ apiKey, baseURL: `http://127.0.0.1:${port}/v1` });
  const stream = await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'The little dog' }], max_tokens: 48, stream: true, stream_options: { include_usage: true } });
  for await (const chunk of stream) {
    process.stdout.write(chunk.choices[0]?.delta.content ?? '');
    if (chunk.usage) console.log(`\n[usage] prompt ${chunk.usage.prompt_tokens}, completion ${chunk.usage.completion_tokens} tokens`);
  }
  if (once) {
    stopAll();
    process.exit(0);
  }
  console.log(`\niop is running: OPENAI_BASE_URL=http://127.0.0.1:${port}/v1 OPENAI_API_KEY=${apiKey}. Ctrl-C stops it.`);
} catch (error) {
  console.error(`start failed: ${error.message}`);
  stopAll();
  process.exit(1);
}
