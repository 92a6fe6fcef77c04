#!/usr/bin/env node
/**
 * `iop-agent`: the node agent CLI. Settings: defaults < config file (`--config`, JSON or YAML) <
 * environment (`IOP_*`) < flags, all from the schema in options.ts.
 * SIGTERM/SIGINT: drain, deregister, and exit once idle (or after --shutdown-deadline-ms).
 */
import {
  ConfigError,
  addBindingFlags,
  applyHeapGrowth,
  iopCommand,
  layerFromEnv,
  layerFromFlags,
  mergeConfigLayers,
  printReadiness,
  readConfigFile,
  startTracing,
} from '@iop/core';
import { startAgent, type AgentHandle } from './start-agent.js';
import { resolveAgentOptions, type AgentOptionsInput } from './options.js';
import { AGENT_BINDINGS } from './options-schema.js';
import { AGENT_VERSION } from './agent.js';

/** The command line's metrics port when none is given (programmatic agents have none). */
const DEFAULT_METRICS_PORT = 8082;

const program = iopCommand(
  'iop-agent',
  AGENT_VERSION,
  'iop node agent: dials the edge over a gRPC tunnel and serves runs from an OpenAI-compatible server or an embedded llama.cpp model.\nEvery setting aB of the config file is also --a-b and IOP_A_B (docs/configuration.md).',
).option('-c, --config <file>', 'config file, JSON or YAML (env IOP_AGENT_CONFIG)');

/** Each flag (aliases too), from the schema's one table. */
const givenFlags = addBindingFlags(program, AGENT_BINDINGS);

async function main(): Promise<void> {
  program.parse();
  const configPath = (program.opts<{ config?: string }>().config ?? process.env.IOP_AGENT_CONFIG) || undefined;
  let input: AgentOptionsInput;
  let heapGrowthPercent: number | undefined;
  try {
    const file = configPath === undefined ? {} : readConfigFile(configPath);
    const env = layerFromEnv(AGENT_BINDINGS, process.env);
    const flags = layerFromFlags(AGENT_BINDINGS, givenFlags());
    const merged = mergeConfigLayers(file, env.values, flags.values);
    // Only the command line's default port may be taken: then the agent runs without it.
    const metricsPortRequired = merged.metricsPort !== undefined;
    input = {
      ...merged,
      metricsPort: (merged.metricsPort as number | string | undefined) ?? DEFAULT_METRICS_PORT,
      metricsPortRequired,
    } as AgentOptionsInput;
    const readProblems = [...env.problems, ...flags.problems];
    let rest: string[] = [];
    try {
      heapGrowthPercent = resolveAgentOptions(input, [env.sources, flags.sources]).heapGrowthPercent;
    } catch (error) {
      if (readProblems.length === 0) throw error;
      rest = [error instanceof Error ? error.message.replace(/^invalid agent options: /, '') : String(error)];
    }
    if (readProblems.length > 0)
      throw new ConfigError(`invalid agent options: ${[...readProblems, ...rest].join('; ')}`);
  } catch (error) {
    process.stderr.write(`iop-agent: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(2);
  }
  if (heapGrowthPercent !== undefined) applyHeapGrowth(heapGrowthPercent);
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
