/**
 * The pool's acquire step: pick a provider of a model group and start the run on it in one synchronous step (so two
 * requests never take the same last slot), or wait in the group's bounded admission queue; a group with no room now
 * hands the request to the first of its `fallbacks` that has. The picking itself is the router's (router.ts).
 */
import { IopError, excerpt } from '@iop/core';
import type { AdmissionQueue } from './admission-queue.js';
import { QueueRefusal } from './admission-queue.js';
import { CandidateSnapshot } from './candidate-snapshot.js';
import { RECONNECT_RETRY_AFTER_SECONDS, type ModelCatalog } from './model-catalog.js';
import type { OutlierTicket } from './outlier-detector.js';
import type { ModelGroup } from './pool-config.js';
import type { PoolMetrics } from './pool-metrics.js';
import { GroupRemovedError } from './pool-reload.js';
import type { PoolPick, RouteOptions, Router } from './router.js';
import type { RunStream } from './run-stream.js';
import { AttemptTrace } from '../telemetry/request-tracing.js';

export interface AcquireOptions extends RouteOptions {
  /**
   * Provider ids to avoid (already tried); ignored when no other provider has a free slot now (a retry then goes back
   * to one it tried).
   */
  exclude?: ReadonlySet<string> | undefined;
  signal?: AbortSignal;
}

export interface AcquiredRun {
  run: RunStream;
  pick: PoolPick;
  /** The group that serves it (a fallback group when the first had no room). */
  group: ModelGroup;
  ticket: OutlierTicket;
}

/** Every provider of the group is gone, draining or ejected: waiting in the queue would only delay this answer. */
function noneAccepting(name: string): IopError {
  return new IopError(
    'no_capacity',
    `no provider of \`${excerpt(name)}\` is taking requests (disconnected, draining or unhealthy)`,
    {
      retryAfterSeconds: RECONNECT_RETRY_AFTER_SECONDS,
    },
  );
}

export class RunAcquirer {
  constructor(
    private readonly parts: { catalog: ModelCatalog; router: Router; queue: AdmissionQueue; metrics: PoolMetrics },
  ) {}

  /**
   * Picks a provider and starts the run (`start`) at once, or waits in the group's queue (a retry,
   * `exclude` non-empty, waits ahead of first attempts and is not refused for a full queue). The
   * group's candidates are read once (`CandidateSnapshot`) and read again only when providers or
   * the config changed while the request waited.
   * @throws IopError when no provider serves the group or its fallbacks now: 503 `no_capacity`
   *   with `Retry-After: 1` when the name is known (`knows`: a configured group or alias, or a
   *   served model name some provider has served since the edge started: its agent is restarting,
   *   and SDKs retry a 503, never a 404; Anthropic clients get 529 `overloaded_error`), or when
   *   this is a retry (`exclude` non-empty); else 404 `model_not_found` (see `noProviderError`).
   *   503 `no_capacity` when every provider is draining or ejected, also for a request already
   *   waiting in the queue once that happens (at the next notify); `overloaded` (`QueueRefusal`,
   *   `Retry-After`) when the queue is full or the wait runs out; the signal's reason when it aborts.
   */
  async acquire(
    group: ModelGroup,
    options: AcquireOptions,
    start: (pick: PoolPick) => RunStream,
  ): Promise<AcquiredRun> {
    const { router } = this.parts;
    group = router.current(group);
    let snapshot = new CandidateSnapshot(this.parts.catalog);
    const served = router.servingGroup(group, snapshot);
    const retry = options.exclude !== undefined && options.exclude.size > 0;
    if (served === undefined) {
      // On a retry the model did exist a moment ago (its last provider just went away), and a
      // configured or once-served name is only missing its providers (an agent restarting): that
      // is a capacity problem the client may retry, not an unknown model.
      if (retry)
        throw new IopError('no_capacity', `no provider of \`${excerpt(group.name)}\` is connected any more`, {
          retryAfterSeconds: RECONNECT_RETRY_AFTER_SECONDS,
        });
      throw this.parts.catalog.noProviderError(group.name);
    }
    const attemptTrace = new AttemptTrace(served.name);
    const tryAcquire = (): AcquiredRun | undefined => {
      if (!snapshot.current) snapshot = new CandidateSnapshot(this.parts.catalog);
      // A waiter may outlive a reload: it routes by the group as configured now.
      const head = router.current(served);
      const acquired =
        this.tryStart(head, snapshot, options, retry, attemptTrace, start) ??
        this.tryFallbacks(head, snapshot, options, retry, attemptTrace, start);
      // A waiter whose last provider left (or began to drain, or was ejected) gets the answer a new
      // request gets now, at the next notify, instead of a 429 when its wait runs out.
      if (acquired === undefined && !router.anyAccepting(head, snapshot)) throw noneAccepting(group.name);
      return acquired;
    };
    if (!router.anyAccepting(served, snapshot)) throw noneAccepting(group.name);
    try {
      const queuedAt = performance.now();
      const acquired = await this.parts.queue.acquire(served.name, served.queue, tryAcquire, options.signal, retry);
      this.parts.metrics.queueWait.observe({ group: served.name }, (performance.now() - queuedAt) / 1000);
      if (options.affinityKey !== undefined && this.parts.catalog.config.affinity.enabled && !retry) {
        const hit = router.observeAffinity(acquired.group, options.affinityKey, acquired.pick.provider.id);
        if (hit !== 'new') this.parts.metrics.affinityHits.inc({ group: acquired.group.name, result: hit });
      }
      return acquired;
    } catch (error) {
      attemptTrace.failed(error);
      // The group it waited for was removed by a reload: resolve the request again by its name.
      if (error instanceof GroupRemovedError) return this.acquire(group, options, start);
      if (error instanceof QueueRefusal)
        this.parts.metrics.queueRejections.inc({ group: served.name, reason: error.reason });
      throw error;
    }
  }

  /**
   * Starts the run on a provider of `group` now, when one is eligible (on a retry, one of the
   * providers already tried when only they could serve); undefined otherwise.
   */
  private tryStart(
    group: ModelGroup,
    snapshot: CandidateSnapshot,
    options: AcquireOptions,
    retry: boolean,
    trace: AttemptTrace,
    start: (pick: PoolPick) => RunStream,
  ): AcquiredRun | undefined {
    const pick =
      this.parts.router.pick(group, snapshot, options) ??
      (retry
        ? this.parts.router.pick(group, snapshot, { affinityKey: options.affinityKey, prefixKeys: options.prefixKeys })
        : undefined);
    if (pick === undefined) return undefined;
    const ticket = this.parts.router.started(group, pick.provider.id);
    return { run: trace.started(pick.provider, pick.model, () => start(pick)), pick, group, ticket };
  }

  /** `tryStart` on each fallback of `group` in order (those that exist). */
  private tryFallbacks(
    group: ModelGroup,
    snapshot: CandidateSnapshot,
    options: AcquireOptions,
    retry: boolean,
    trace: AttemptTrace,
    start: (pick: PoolPick) => RunStream,
  ): AcquiredRun | undefined {
    for (const name of group.fallbacks) {
      const fallback = this.parts.router.group(name);
      const acquired =
        fallback === undefined ? undefined : this.tryStart(fallback, snapshot, options, retry, trace, start);
      if (acquired !== undefined) return acquired;
    }
    return undefined;
  }
}
