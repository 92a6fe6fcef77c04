/**
 * What the pool needs of the tunnel, as interfaces the pool owns (the tunnel implements them:
 * `tunnel/agent-registry.ts`, `tunnel/agent-session.ts`, `tunnel/run-registry.ts`), so the pool
 * never imports the tunnel: the connected agents by model with their joins and leaves
 * (`AgentDirectory`), each one a provider with what it registered (`PoolAgent`), and the runs
 * whose end frees a slot (`RunEnds`).
 */
import type { PoolProvider } from './provider.js';

/** A connected agent: a provider with the models and capabilities it registered. */
export interface PoolAgent extends PoolProvider {
  readonly kind: 'agent';
  readonly agentId: string;
  /** The tunnel session's id (residency is indexed per session). */
  readonly sessionId: string;
  /** The models it registered (proto `ModelInfo`; only the id is read here). */
  readonly models: readonly { readonly id: string }[];
  /** The capabilities it registered (e.g. `kv-events`). */
  readonly capabilities: ReadonlySet<string>;
  /** Its Control stream ended. */
  readonly closed: boolean;
  /** It finishes its runs and takes no new one. */
  readonly draining: boolean;
}

/** Whether an agent joined or left. */
export type AgentChange = 'added' | 'removed';

/** The connected agents, indexed by the models they serve. */
export interface AgentDirectory {
  /** Calls `listener` after every join and leave from now on; returns its removal. */
  addListener(listener: (agent: PoolAgent, change: AgentChange) => void): () => void;
  /** Agents serving `model` (empty when none); not to be mutated. */
  forModel(model: string): readonly PoolAgent[];
  /** Every connected agent. */
  all(): PoolAgent[];
}

/** The runs in flight on agents: `listener` is called as each one ends (a slot is free). */
export interface RunEnds {
  addFinishListener(listener: () => void): void;
}
