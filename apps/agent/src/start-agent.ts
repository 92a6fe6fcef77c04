/**
 * Programmatic entry: `startAgent(options)` builds the backend, starts the agent and returns a
 * handle.
 */
import type { Backend } from './backends/backend.js';
import { LlamaCppBackend } from './backends/llamacpp/llamacpp-backend.js';
import { OpenAiBackend } from './backends/openai-backend.js';
import { AGENT_VERSION, Agent } from './agent.js';
import { AgentMetrics, type AgentState } from './telemetry/agent-metrics.js';
import { startHealthServer, type HealthServer } from './telemetry/health-server.js';
import { ObservedBackend } from './telemetry/observed-backend.js';
import { resolveAgentOptions, type AgentOptions, type AgentOptionsInput } from './options.js';

export interface AgentHandle {
  /** The port of /healthz, /readyz and /metrics, when the agent serves them (`metricsPort`). */
  readonly metricsPort: number | undefined;
  /** Stops at once: in-flight runs are cancelled (their backend requests aborted). */
  close(): Promise<void>;
  /** Drain, wait for in-flight runs up to `deadlineMs` (default the option, 30 000), then stop. */
  shutdown(deadlineMs?: number): Promise<void>;
  /** Takes no new runs (true) or takes them again (false). */
  setDraining(draining: boolean): void;
  /** Resolves when the agent stopped (including a deregistration asked by the edge). */
  readonly stopped: Promise<void>;
  readonly agent: Agent;
}

/** Starts an agent. Throws on invalid options or when the embedded model cannot be loaded. */
export async function startAgent(input: AgentOptionsInput): Promise<AgentHandle> {
  const options = resolveAgentOptions(input);
  const inner = options.backendInstance ?? (await createBackend(options));
  const holder: { agent?: Agent } = {};
  const state: AgentState = {
    inFlight: () => holder.agent?.inFlight ?? 0,
    maxConcurrency: options.maxConcurrency,
    draining: () => holder.agent?.isDraining ?? false,
    edges: () => holder.agent?.links.map((link) => ({ edge: link.edgeUrl, registered: link.isRegistered })) ?? [],
    kvEvents: () => {
      const residency = holder.agent?.kvResidency;
      if (residency === undefined) return undefined;
      const { received, applied, replayed, dropped, resyncs } = residency.eventCounts;
      return {
        received,
        applied,
        replayed,
        dropped,
        resyncs,
        blocks: residency.blocks.size,
        prefixes: residency.prefixes.size,
      };
    },
  };
  const metrics = new AgentMetrics(state);
  const agent = new Agent(options, new ObservedBackend(inner, metrics));
  holder.agent = agent;
  let health: HealthServer | undefined;
  if (options.metricsPort !== undefined) {
    try {
      health = await startHealthServer(options.metricsHost, options.metricsPort, metrics, state);
    } catch (error) {
      if (options.metricsPortRequired) {
        await agent.close();
        throw error;
      }
      // Only the default port was asked for (e.g. several agents on one host): run without it.
      agent.logger.warn({ err: error }, 'no /healthz and /metrics port: the default one is taken; set --metrics-port');
    }
    void agent.stopped.finally(() => health?.close());
  }
  agent.logger.info(startupFields(options, inner, health?.port), 'agent starting');
  return {
    metricsPort: health?.port,
    close: () => agent.close(),
    shutdown: (deadlineMs) => agent.shutdown(deadlineMs),
    setDraining: (draining) => agent.setDraining(draining),
    stopped: agent.stopped,
    agent,
  };
}

/** The start-up line: backend, model, threads, GPU, concurrency, edges and the metrics port. */
function startupFields(
  options: AgentOptions,
  backend: Backend,
  metricsPort: number | undefined,
): Record<string, unknown> {
  const embedded = backend instanceof LlamaCppBackend ? backend.describe() : undefined;
  return {
    version: AGENT_VERSION,
    backend: backend.kind,
    ...(options.backend === 'openai' ? { backendUrl: options.backendUrl, models: options.models } : {}),
    ...(embedded ?? {}),
    maxConcurrency: options.maxConcurrency,
    edges: options.edgeUrls,
    metricsPort,
    metricsHost: metricsPort === undefined ? undefined : options.metricsHost,
  };
}

/** The backend the options name. */
export async function createBackend(options: AgentOptions): Promise<Backend> {
  if (options.backend === 'openai') {
    return new OpenAiBackend({
      baseUrl: options.backendUrl!,
      ...(options.backendApiKey === undefined ? {} : { apiKey: options.backendApiKey }),
      ...(options.models === undefined ? {} : { models: options.models }),
      ...(options.apis === undefined ? {} : { apis: options.apis }),
      connections: Math.max(options.maxConcurrency, 4),
    });
  }
  return LlamaCppBackend.create({
    ...(options.model === undefined ? {} : { model: options.model }),
    ...(options.threads === undefined ? {} : { threads: options.threads }),
    gpu: options.gpu,
    ...(options.contextSize === undefined ? {} : { contextSize: options.contextSize }),
    sequences: options.maxConcurrency,
    files: {
      ...(options.modelsPath === undefined ? {} : { modelsPath: options.modelsPath }),
      ...(options.modelCache === undefined ? {} : { modelCache: options.modelCache }),
      downloadProbeTimeoutMs: options.downloadProbeTimeoutMs,
    },
  });
}
