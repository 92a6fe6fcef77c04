#!/usr/bin/env node
/**
 * `iop-agent`: the node agent CLI. Every flag can also come from its environment variable.
 * SIGTERM/SIGINT: drain, deregister, and exit once idle (or after --shutdown-deadline-ms).
 */
import { Command, Option } from 'commander';
import { printReadiness, startTracing } from '@iop/core';
import { startAgent, type AgentHandle } from './start-agent.js';
import { resolveAgentOptions, type AgentOptionsInput } from './options.js';
import { AGENT_VERSION } from './agent.js';

const program = new Command('iop-agent')
  // Bad usage exits 2 (commander uses 1) on every iop command; --help and --version exit 0.
  .exitOverride((error) => process.exit(error.exitCode === 0 ? 0 : 2))
  .version(AGENT_VERSION)
  .description('iop node agent: dials the edge over a gRPC tunnel and serves runs from an OpenAI-compatible server or an embedded llama.cpp model.')
  .addOption(new Option('--edge <url,...>', 'edge tunnel URL(s) (http:// = h2c, https:// = TLS); several = one session per edge, runs from any').env('IOP_EDGE_URL').default('http://127.0.0.1:8081'))
  .addOption(new Option('--join-token <token>', "shared secret of the edge's agent pool").env('IOP_JOIN_TOKEN'))
  .addOption(new Option('--agent-id <id>', 'agent id (default: the hostname)').env('IOP_AGENT_ID'))
  .addOption(new Option('--backend <kind>', 'openai (vLLM, SGLang, llama.cpp server, Ollama) or llamacpp (embedded)').env('IOP_BACKEND').choices(['openai', 'llamacpp']).default('llamacpp'))
  .addOption(new Option('--backend-url <url>', 'openai: base URL of the server, e.g. http://127.0.0.1:8000 (a trailing /v1 is dropped)').env('IOP_BACKEND_URL'))
  .addOption(new Option('--backend-api-key <key>', 'openai: key sent to the server as Authorization: Bearer').env('IOP_BACKEND_API_KEY'))
  .addOption(new Option('--models <a,b>', 'openai: served model names (skips /v1/models discovery)').env('IOP_MODELS'))
  .addOption(new Option('--model <path|hf:uri>', 'llamacpp: GGUF file or hf:owner/repo/file.gguf (default: stories260K.gguf from the models search path)').env('IOP_MODEL'))
  .addOption(new Option('--threads <n>', 'llamacpp: CPU threads, 1-256 (default: cores - 1)').env('IOP_THREADS'))
  .addOption(new Option('--gpu <kind>', 'llamacpp: auto, none, cuda, vulkan or metal').env('IOP_GPU').default('auto'))
  .addOption(new Option('--context-size <tokens>', "llamacpp: context per sequence, 16-1048576 (default: the model's, at most 8192)").env('IOP_CONTEXT_SIZE'))
  .addOption(new Option('--max-concurrency <n>', 'runs at once, 1-1024 (default: 4 llamacpp, 16 openai)').env('IOP_MAX_CONCURRENCY'))
  .addOption(new Option('--labels <k=v,...>', 'labels sent at registration').env('IOP_LABELS'))
  .addOption(new Option('--heartbeat-ms <ms>', 'heartbeat period when the edge gives none, 100-600000').env('IOP_HEARTBEAT_MS').default('5000'))
  .addOption(new Option('--first-byte-timeout-ms <ms>', 'default first-byte timeout of a run, 100-3600000 (a non-stream answer sends its first byte only when complete)').env('IOP_FIRST_BYTE_TIMEOUT_MS').default('600000'))
  .addOption(new Option('--idle-timeout-ms <ms>', 'longest gap between backend body bytes, 100-3600000').env('IOP_IDLE_TIMEOUT_MS').default('60000'))
  .addOption(new Option('--shutdown-deadline-ms <ms>', 'on SIGTERM, longest wait for in-flight runs, 0-3600000').env('IOP_SHUTDOWN_DEADLINE_MS').default('30000'))
  .addOption(new Option('--reconnect-jitter-ms <ms>', 'extra random delay before reconnecting to a lost edge, 0-600000').env('IOP_RECONNECT_JITTER_MS').default('1000'))
  .addOption(new Option('--tls-ca <file>', "PEM CA for the edge's TLS certificate").env('IOP_TLS_CA'))
  .addOption(new Option('--log-level <level>', 'fatal, error, warn, info, debug, trace or silent (format: JSON, or pretty on a terminal; IOP_LOG_FORMAT=json|pretty forces one)').env('IOP_LOG_LEVEL').default('info'))
  .addOption(new Option('--metrics-port <port>', 'port of /healthz, /readyz and /metrics, 0 = any free port, off = none').env('IOP_METRICS_PORT').default('8082'))
  .addOption(new Option('--metrics-host <host>', 'listen address of --metrics-port').env('IOP_METRICS_HOST').default('127.0.0.1'))
  .showHelpAfterError();

async function main(): Promise<void> {
  program.parse();
  const flags = program.opts<Record<string, string | undefined>>();
  const input: AgentOptionsInput = {
    edgeUrl: flags.edge,
    joinToken: flags.joinToken,
    agentId: flags.agentId,
    backend: flags.backend,
    backendUrl: flags.backendUrl,
    backendApiKey: flags.backendApiKey,
    models: flags.models,
    model: flags.model,
    threads: flags.threads,
    gpu: flags.gpu,
    contextSize: flags.contextSize,
    maxConcurrency: flags.maxConcurrency,
    labels: flags.labels,
    heartbeatMs: flags.heartbeatMs,
    firstByteTimeoutMs: flags.firstByteTimeoutMs,
    idleTimeoutMs: flags.idleTimeoutMs,
    shutdownDeadlineMs: flags.shutdownDeadlineMs,
    reconnectJitterMs: flags.reconnectJitterMs,
    tlsCa: flags.tlsCa,
    logLevel: flags.logLevel,
    metricsPort: flags.metricsPort,
    metricsHost: flags.metricsHost,
    metricsPortRequired: program.getOptionValueSource('metricsPort') !== 'default',
  } as AgentOptionsInput;
  try {
    resolveAgentOptions(input);
  } catch (error) {
    process.stderr.write(`iop-agent: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(2);
  }
  const tracing = startTracing({ serviceName: 'iop-agent', serviceVersion: AGENT_VERSION });
  let handle: AgentHandle | undefined;
  let signals = 0;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (handle === undefined) process.exit(0); // still starting: nothing in flight
    signals++;
    if (signals > 1) {
      handle.agent.logger.warn({ signal }, 'second signal: stopping now');
      void handle.close();
      return;
    }
    handle.agent.logger.info({ signal }, 'signal received: draining');
    void handle.shutdown();
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  try {
    handle = await startAgent(input);
  } catch (error) {
    // Valid options, but the agent could not start (model not found or not loadable, port taken).
    process.stderr.write(`iop-agent: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  }
  const started = handle;
  // Ready: registered with an edge.
  void started.agent.registered.then(() => printReadiness({ metricsPort: started.metricsPort ?? null }));
  await handle.stopped;
  await tracing?.shutdown();
  process.exit(0);
}

void main();
