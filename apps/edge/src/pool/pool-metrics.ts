/**
 * Prometheus metrics of the provider pool (registered on the edge's registry). Labels are bounded:
 * `group` is a configured group or a served model name, `provider` a registered agent id or a
 * configured direct provider id.
 *
 * - `iop_prefix_affinity_hits_total{group,result="warm|cold"}`: requests whose affinity key was
 *   served before, by whether they landed on the same provider (its KV cache still holds the prefix).
 * - `iop_pool_attempts_total{group,provider,outcome}`: attempt verdicts (`success`, `client_error`,
 *   `server_error`, `connect_failure`, `timeout`, `cancelled`).
 * - `iop_pool_retries_total{group,reason}`: retries and fallbacks taken (`retry`, `fallback`,
 *   `budget_exhausted` for a retry the pool-wide budget refused).
 * - `iop_pool_ejections_total{group,provider}` and `iop_pool_provider_ejected{group,provider}` (1
 *   while ejected or probing).
 * - `iop_pool_queue_rejections_total{group,reason="full|timeout"}` and `iop_pool_queued{group}`.
 * - `iop_pool_queue_wait_seconds{group}`: time from admission to a provider slot (0 when one was free).
 * - `iop_residency_picks_total{group,result="resident|cold"}`: cache-aware picks (requests with prefix
 *   keys while some agent reports residency): to an agent holding part of the prompt, or to one holding none.
 * - `iop_residency_reports_refused_total{reason}`: agents' residency reports refused
 *   (`too_many_prefixes`, `bad_key`, `absurd_tokens`).
 * - `iop_residency_prefixes`: (agent session, prefix key) entries in the edge's residency index.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

export class PoolMetrics {
  readonly affinityHits: Counter<'group' | 'result'>;
  readonly attempts: Counter<'group' | 'provider' | 'outcome'>;
  readonly retries: Counter<'group' | 'reason'>;
  readonly ejections: Counter<'group' | 'provider'>;
  readonly ejected: Gauge<'group' | 'provider'>;
  readonly queueRejections: Counter<'group' | 'reason'>;
  readonly queued: Gauge<'group'>;
  readonly queueWait: Histogram<'group'>;
  readonly residencyPicks: Counter<'group' | 'result'>;
  readonly residencyRefused: Counter<'reason'>;

  /** @param residentPrefixes entries in the residency index, read at each scrape. */
  constructor(registry: Registry, queued: () => Record<string, number>, residentPrefixes: () => number = () => 0) {
    const registers = [registry];
    this.residencyPicks = new Counter({
      name: 'iop_residency_picks_total',
      help: 'Cache-aware picks (requests with prefix keys while agents report residency): to an agent holding part of the prompt (resident) or none (cold).',
      labelNames: ['group', 'result'] as const,
      registers,
    });
    this.residencyRefused = new Counter({
      name: 'iop_residency_reports_refused_total',
      help: "Agents' residency reports refused, by reason.",
      labelNames: ['reason'] as const,
      registers,
    });
    new Gauge({
      name: 'iop_residency_prefixes',
      help: "(agent session, prefix key) entries in the edge's residency index.",
      registers,
      collect() {
        this.set(residentPrefixes());
      },
    });
    this.affinityHits = new Counter({
      name: 'iop_prefix_affinity_hits_total',
      help: 'Requests with a known prefix: landed on the provider that served it before (warm) or elsewhere (cold).',
      labelNames: ['group', 'result'] as const,
      registers,
    });
    this.attempts = new Counter({
      name: 'iop_pool_attempts_total',
      help: 'Attempt verdicts by provider.',
      labelNames: ['group', 'provider', 'outcome'] as const,
      registers,
    });
    this.retries = new Counter({
      name: 'iop_pool_retries_total',
      help: 'Retries, fallbacks and retries refused by the pool-wide budget.',
      labelNames: ['group', 'reason'] as const,
      registers,
    });
    this.ejections = new Counter({
      name: 'iop_pool_ejections_total',
      help: 'Outlier ejections by provider.',
      labelNames: ['group', 'provider'] as const,
      registers,
    });
    this.ejected = new Gauge({
      name: 'iop_pool_provider_ejected',
      help: '1 while a provider is ejected or probing, else 0.',
      labelNames: ['group', 'provider'] as const,
      registers,
    });
    this.queueRejections = new Counter({
      name: 'iop_pool_queue_rejections_total',
      help: 'Requests refused by admission control.',
      labelNames: ['group', 'reason'] as const,
      registers,
    });
    this.queueWait = new Histogram({
      name: 'iop_pool_queue_wait_seconds',
      help: 'Time a request waited for a provider slot (0 when one was free at once).',
      labelNames: ['group'] as const,
      buckets: [0.001, 0.005, 0.025, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers,
    });
    this.queued = new Gauge({
      name: 'iop_pool_queued',
      help: 'Requests waiting for a provider, by model group.',
      labelNames: ['group'] as const,
      registers,
      collect() {
        this.reset();
        for (const [group, count] of Object.entries(queued())) this.set({ group }, count);
      },
    });
  }
}
