/**
 * The minimal view of a provider that the routing and resilience modules need, so tunnelled
 * agents (`AgentSession`, via `agentProvider`) and direct OpenAI-compatible providers are routed
 * by the same code. Time and randomness are injected (`Clock`, `Random`) so every module is pure
 * and testable with a fake clock and a seeded generator.
 */
import type { AgentSession } from '../tunnel/agent-session.js';

export interface ProviderLoad {
  /** Requests queued inside the provider (the agent's own queue), count. */
  queued: number;
  /** Backend KV-cache usage in [0, 1], when the backend reports it. */
  kvCacheUsage?: number | undefined;
  /** Requests waiting inside the backend, when known (already part of `inFlight` as the edge counts it). */
  backendWaiting?: number | undefined;
}

export interface Provider {
  /** Stable id: the agent id, or the direct provider's configured id. */
  readonly id: string;
  /** Requests it may run at once (≥ 1). */
  readonly maxConcurrency: number;
  /** Requests the edge has assigned to it and not yet seen finish. */
  inFlight: number;
  /** Relative capacity (> 0, default 1): a provider of weight 2 takes twice the share of traffic. */
  readonly weight: number;
  readonly labels: Readonly<Record<string, string>>;
  load: ProviderLoad;
  /** Whether it may take another request now (connected, not draining, below `maxConcurrency`). */
  readonly available: boolean;
}

/** Milliseconds since an arbitrary epoch (default `Date.now`). */
export type Clock = () => number;

/** Uniform in [0, 1) (default `Math.random`). */
export type Random = () => number;

/** Whether `provider` carries every label in `required` with the same value (no requirement = true). */
export function hasLabels(provider: Provider, required: Readonly<Record<string, string>> | undefined): boolean {
  if (required === undefined) return true;
  for (const key in required) {
    if (provider.labels[key] !== required[key]) return false;
  }
  return true;
}

const adapters = new WeakMap<AgentSession, Provider>();

/**
 * The `Provider` view of a tunnelled agent (id = `agentId`, weight = the agent's `weight` label
 * when it is a positive number, else 1). Reads and writes go through to the session, and the same
 * object is returned for the same session, so identity-keyed state stays stable.
 */
export function agentProvider(session: AgentSession): Provider {
  let provider = adapters.get(session);
  if (provider === undefined) {
    const labelled = Number(session.labels.weight);
    const weight = Number.isFinite(labelled) && labelled > 0 ? labelled : 1;
    provider = {
      id: session.agentId,
      maxConcurrency: session.maxConcurrency,
      weight,
      labels: session.labels,
      get inFlight() {
        return session.inFlight;
      },
      set inFlight(value: number) {
        session.inFlight = value;
      },
      get load() {
        return session.load;
      },
      set load(value: ProviderLoad) {
        session.load = { ...session.load, queued: value.queued, kvCacheUsage: value.kvCacheUsage, backendWaiting: value.backendWaiting };
      },
      get available() {
        return session.available;
      },
    };
    adapters.set(session, provider);
  }
  return provider;
}
