/**
 * Programmatic entry: `startAgent(options)` builds the backend, starts the agent and returns a
 * handle.
 */
import type { Backend } from './backends/backend.js';
import { LlamaCppBackend } from './backends/llamacpp/llamacpp-backend.js';
import { OpenAiBackend } from './backends/openai-backend.js';
import { Agent } from './agent.js';
import { resolveAgentOptions, type AgentOptions, type AgentOptionsInput } from './options.js';

export interface AgentHandle {
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
  const backend = options.backendInstance ?? (await createBackend(options));
  const agent = new Agent(options, backend);
  return {
    close: () => agent.close(),
    shutdown: (deadlineMs) => agent.shutdown(deadlineMs),
    setDraining: (draining) => agent.setDraining(draining),
    stopped: agent.stopped,
    agent,
  };
}

/** The backend the options name. */
export async function createBackend(options: AgentOptions): Promise<Backend> {
  if (options.backend === 'openai') {
    return new OpenAiBackend({
      baseUrl: options.backendUrl!,
      ...(options.backendApiKey === undefined ? {} : { apiKey: options.backendApiKey }),
      ...(options.models === undefined ? {} : { models: options.models }),
      connections: Math.max(options.maxConcurrency, 4),
    });
  }
  return LlamaCppBackend.create({
    ...(options.model === undefined ? {} : { model: options.model }),
    ...(options.threads === undefined ? {} : { threads: options.threads }),
    gpu: options.gpu,
    ...(options.contextSize === undefined ? {} : { contextSize: options.contextSize }),
    sequences: options.maxConcurrency,
  });
}
