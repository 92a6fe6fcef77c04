/**
 * A provider the pool can send a run to: a tunnelled agent (`agentPoolProvider`) or a direct
 * OpenAI-compatible server (`DirectProvider`). Both produce the same `PoolRun`: a frame stream
 * RESPONSE_START, BODY…, USAGE?, END | ERROR (proto/iop/v1/tunnel.proto `ProviderTunnelFrame`),
 * so the pipeline after `openRun` does not know which kind served it.
 */
import type { ProviderTunnelFrame } from '@iop/proto';
import type { AgentSession } from '../tunnel/agent-session.js';
import type { AsyncQueue } from '@iop/core';
import type { RunHandle, RunRegistry, RunRequest } from '../tunnel/run-registry.js';
import { agentProvider, type Provider, type ProviderLoad } from './provider.js';
import { traceTunnelRun } from '../telemetry/request-tracing.js';

/** One run on one provider. */
export interface PoolRun {
  readonly runId: string;
  /** The agent id or the direct provider's configured id. */
  readonly providerId: string;
  /** Frames in order; ends after END or ERROR. Bounded: a slow consumer slows the producer. */
  readonly frames: AsyncQueue<ProviderTunnelFrame>;
  readonly isFinished: boolean;
  /** Stops the run (the backend request is aborted). Idempotent. */
  cancel(reason: string): void;
}

export interface PoolProvider extends Provider {
  readonly kind: 'agent' | 'direct';
  /**
   * Whether it takes runs at all (not draining, not gone). A provider that is accepting but not
   * `available` is only at capacity: worth queueing for.
   */
  readonly accepting: boolean;
  /** Whether it serves the backend model id `model`. */
  serves(model: string): boolean;
  /** Context length of `model` in tokens, when known. */
  contextLength(model: string): number | undefined;
  /** Starts a run now (counts in `inFlight` at once). `request.model` is the served model id. */
  start(request: RunRequest): PoolRun;
}

class AgentRun implements PoolRun {
  constructor(private readonly handle: RunHandle) {}
  get runId(): string {
    return this.handle.runId;
  }
  get providerId(): string {
    return this.handle.session.agentId;
  }
  get frames(): AsyncQueue<ProviderTunnelFrame> {
    return this.handle.frames;
  }
  get isFinished(): boolean {
    return this.handle.isFinished;
  }
  cancel(reason: string): void {
    this.handle.cancel(reason);
  }
}

const adapters = new WeakMap<AgentSession, PoolProvider>();

/** The pool view of a tunnelled agent; one object per session (identity-stable). */
export function agentPoolProvider(session: AgentSession, runs: RunRegistry): PoolProvider {
  let adapter = adapters.get(session);
  if (adapter === undefined) {
    const view = agentProvider(session);
    adapter = {
      kind: 'agent',
      id: view.id,
      maxConcurrency: view.maxConcurrency,
      weight: view.weight,
      labels: view.labels,
      get inFlight() {
        return view.inFlight;
      },
      set inFlight(value: number) {
        view.inFlight = value;
      },
      get load(): ProviderLoad {
        return view.load;
      },
      set load(value: ProviderLoad) {
        view.load = value;
      },
      get available() {
        return view.available;
      },
      get accepting() {
        return !session.closed && !session.draining;
      },
      serves: (model) => session.serves(model),
      contextLength: (model) => session.contextLength(model),
      start: (request) => {
        const traced = traceTunnelRun(request.headers, session.agentId);
        const handle = runs.start(session, traced.headers === request.headers ? request : { ...request, headers: traced.headers });
        traced.bind(handle.runId, handle.isFinished);
        return new AgentRun(handle);
      },
    };
    adapters.set(session, adapter);
  }
  return adapter;
}
