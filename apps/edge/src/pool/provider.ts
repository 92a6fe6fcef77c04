/**
 * What the pool routes to and what it gets back. A provider is a tunnelled agent
 * (`tunnel/agent-session.ts`, `AgentSession`) or a direct OpenAI-compatible server
 * (`direct-provider.ts`, `DirectProvider`); both implement `PoolProvider` themselves, and a run
 * started on either is a `RunStream` (`run-stream.ts`), so the pipeline after `openRun` does not
 * know which kind served it. Time and randomness are injected (`Clock`, `Random`) so the routing
 * modules are pure and testable with a fake clock and a seeded generator.
 */
import type { RunRequest, RunStream } from './run-stream.js';

export interface ProviderLoad {
  /** Requests queued inside the provider (the agent's own queue), count. */
  readonly queued: number;
  /** Backend KV-cache usage in [0, 1], when the backend reports it. */
  readonly kvCacheUsage?: number | undefined;
  /** Requests waiting inside the backend, when known (already part of `inFlight` as the edge counts it). */
  readonly backendWaiting?: number | undefined;
}

export interface PoolProvider {
  readonly kind: 'agent' | 'direct';
  /** Stable id: the agent id, or the direct provider's configured id. */
  readonly id: string;
  /** An agent's tunnel session id (its residency is indexed per session); undefined for a direct provider. */
  readonly sessionId?: string;
  /** Requests it may run at once (≥ 1). */
  readonly maxConcurrency: number;
  /** Requests the edge has assigned to it and not yet seen finish. */
  inFlight: number;
  /** Relative capacity (> 0, default 1): a provider of weight 2 takes twice the share of traffic. */
  readonly weight: number;
  readonly labels: Readonly<Record<string, string>>;
  /** What serves its runs, as OpenTelemetry's `gen_ai.provider.name` (`providerNameOf`). */
  readonly providerName: string;
  readonly load: ProviderLoad;
  /** Whether it may take another request now (connected, not draining, below `maxConcurrency`). */
  readonly available: boolean;
  /**
   * Whether it takes runs at all (not draining, not gone). A provider that is accepting but not
   * `available` is only at capacity: worth queueing for.
   */
  readonly accepting: boolean;
  /** Whether it serves the backend model id `model`. */
  serves(model: string): boolean;
  /** Context length of `model` in tokens, when known. */
  contextLength(model: string): number | undefined;
  /**
   * The APIs it serves `model` with (proto `ModelInfo.apis`: `chat`, `completions`, `embeddings`,
   * `rerank`); undefined when it does not tell (every API is tried). Direct providers do not.
   */
  apisOf?(model: string): readonly string[] | undefined;
  /** Starts a run now (counts in `inFlight` at once). `request.model` is the served model id. */
  start(request: RunRequest): RunStream;
}

/** The part of a provider the pickers read (P2C, prefix affinity); tests pass plain objects. */
export type RoutedProvider = Pick<
  PoolProvider,
  'id' | 'maxConcurrency' | 'inFlight' | 'weight' | 'labels' | 'load' | 'available'
> & {
  readonly sessionId?: string | undefined;
};

/** Milliseconds since an arbitrary epoch (default `Date.now`). */
export type Clock = () => number;

/** Uniform in [0, 1) (default `Math.random`). */
export type Random = () => number;

/** Whether `provider` carries every label in `required` with the same value (no requirement = true). */
export function hasLabels(
  provider: Pick<PoolProvider, 'labels'>,
  required: Readonly<Record<string, string>> | undefined,
): boolean {
  if (required === undefined) return true;
  for (const key in required) {
    if (provider.labels[key] !== required[key]) return false;
  }
  return true;
}

/**
 * The label that names what a provider runs, as OpenTelemetry's `gen_ai.provider.name` (e.g. `vllm`, `sglang`,
 * `ollama`).
 */
export const PROVIDER_NAME_LABEL = 'gen_ai.provider.name';

/**
 * A provider's `gen_ai.provider.name` (OpenTelemetry GenAI conventions; a required attribute of
 * their metrics and spans): its `gen_ai.provider.name` label when it has one (an agent started with
 * `--labels gen_ai.provider.name=vllm`, a direct provider's `labels`); else `llama.cpp` for an
 * agent's embedded llama.cpp (`backend` `llamacpp`); else `openai_compatible` — an
 * OpenAI-compatible server of a kind the edge cannot tell (vLLM, SGLang, llama.cpp server and
 * Ollama answer alike), not OpenAI's service.
 */
export function providerNameOf(labels: Readonly<Record<string, string>>, backend: string): string {
  const labelled = labels[PROVIDER_NAME_LABEL];
  if (labelled !== undefined && labelled !== '') return labelled;
  return backend === 'llamacpp' ? 'llama.cpp' : 'openai_compatible';
}

/** A provider's weight from its `weight` label: the label when it is a positive number, else 1. */
export function weightOfLabels(labels: Readonly<Record<string, string>>): number {
  const labelled = Number(labels.weight);
  return Number.isFinite(labelled) && labelled > 0 ? labelled : 1;
}
