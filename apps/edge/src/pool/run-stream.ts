/**
 * One run on one provider, as the pool hands it out: a frame stream RESPONSE_START, BODY…,
 * USAGE?, END | ERROR (proto/iop/v1/tunnel.proto `ProviderTunnelFrame`). A tunnelled agent's run
 * (`tunnel/run-registry.ts`, `RunHandle`) and a direct provider's (`direct-provider.ts`) are both
 * `RunStream`s; failures of either (tunnel, connection, timeouts) arrive as an ERROR frame.
 */
import type { AsyncQueue } from '@iop/core';
import type { ProviderTunnelFrame } from '@iop/proto';
import type { PrefixKeys } from './prefix-keys.js';

export interface RunRequest {
  requestId: string;
  /** Backend model id. */
  model: string;
  method: string;
  path: string;
  headers?: Record<string, string>;
  body: Uint8Array;
  idempotencyKey?: string;
  /** Give up when the agent has not accepted the run (ACCEPTED, or any first frame) within this time, ms. */
  acceptedTimeoutMs: number;
  /**
   * Give up when no first body byte arrives within this time after ACCEPTED, ms (0 = the agent's default only); passed
   * to the agent too.
   */
  firstByteTimeoutMs?: number;
  /** Passed to the agent: longest silence of the backend between body slices, ms (0 = agent default). */
  idleTimeoutMs?: number;
  /** The request's prefix keys; an agent with the `kv-events` capability gets the ones it maps (`keysToMap`). */
  prefixKeys?: PrefixKeys | undefined;
}

export interface RunStream {
  readonly runId: string;
  /** The agent id or the direct provider's configured id. */
  readonly providerId: string;
  /** Frames in order; ends after END or ERROR. Bounded: a slow consumer slows the producer. */
  readonly frames: AsyncQueue<ProviderTunnelFrame>;
  readonly isFinished: boolean;
  /** The backend request was sent: the agent accepted the run (a direct provider sends it at once). */
  readonly accepted: boolean;
  /** Stops the run (the backend request is aborted). Idempotent. */
  cancel(reason: string): void;
}
