/**
 * `GET /metrics` of a sim running a GPU profile: vLLM's Prometheus metric names (V1 engine, see
 * https://docs.vllm.ai/en/stable/usage/metrics/), read from the live scheduler at each scrape,
 * plus the sim's own `iop_sim_*` counters of chat completion requests in flight and aborted.
 *
 * Histogram values are wall-clock seconds (what a client of this sim observes, time-scale
 * included). Labels: `model_name` (the first served model), as vLLM sets it.
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { GpuScheduler, SequenceEnd } from './gpu-scheduler.js';
import type { SimStats } from './request-log.js';

/** vLLM's request-latency buckets (seconds). */
const LATENCY_BUCKETS = [0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680];
const TTFT_BUCKETS = [
  0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560,
];
const TPOT_BUCKETS = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80];
const TOKEN_BUCKETS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000];

export class VllmMetrics {
  readonly registry = new Registry();
  private readonly labels: { model_name: string };
  private readonly success: Counter<'model_name' | 'finished_reason'>;
  private readonly promptTokens: Counter<'model_name'>;
  private readonly generationTokens: Counter<'model_name'>;
  private readonly ttft: Histogram<'model_name'>;
  private readonly e2e: Histogram<'model_name'>;
  private readonly queueTime: Histogram<'model_name'>;
  private readonly prefillTime: Histogram<'model_name'>;
  private readonly decodeTime: Histogram<'model_name'>;
  private readonly tpot: Histogram<'model_name'>;
  private readonly promptSize: Histogram<'model_name'>;
  private readonly generationSize: Histogram<'model_name'>;

  constructor(scheduler: GpuScheduler, stats: Readonly<SimStats>, modelName: string) {
    this.labels = { model_name: modelName };
    const registers = [this.registry];
    const labelNames = ['model_name'] as const;
    const gauge = (name: string, help: string, read: () => number, names: readonly string[] = labelNames): void => {
      const labels = this.labels;
      new Gauge({
        name,
        help,
        labelNames: names,
        registers,
        collect() {
          if (names.length === 0) this.set(read());
          else this.set(labels, read());
        },
      });
    };
    gauge('vllm:num_requests_running', 'Number of requests in model execution batches.', () => scheduler.running.size);
    gauge('vllm:num_requests_waiting', 'Number of requests waiting to be processed.', () => scheduler.waitingCount);
    gauge('vllm:kv_cache_usage_perc', 'KV-cache usage. 1 means 100 percent usage.', () => scheduler.kvCacheUsage());
    gauge('vllm:gpu_cache_usage_perc', 'GPU KV-cache usage. 1 means 100 percent usage (name before vLLM 0.10).', () =>
      scheduler.kvCacheUsage(),
    );
    // prom-client keeps a counter's name as given; vLLM's Python client appends `_total`, so the names here carry it.
    const counter = (name: string, help: string, read: () => number, names: readonly string[] = labelNames): void => {
      const labels = this.labels;
      let last = 0;
      new Counter({
        name,
        help,
        labelNames: names,
        registers,
        collect() {
          const now = read();
          if (names.length === 0) this.inc(now - last);
          else this.inc(labels, now - last);
          last = now;
        },
      });
    };
    counter(
      'vllm:prefix_cache_queries_total',
      'Prefix cache queries, in terms of number of queried tokens.',
      () => scheduler.prefixCache.queriesTokens,
    );
    counter(
      'vllm:prefix_cache_hits_total',
      'Prefix cache hits, in terms of number of cached tokens.',
      () => scheduler.prefixCache.hitsTokens,
    );
    counter(
      'vllm:num_preemptions_total',
      'Cumulative number of preemptions from the engine (the sim never preempts).',
      () => 0,
    );
    gauge(
      'iop_sim_requests_in_flight',
      'Chat completion requests whose connection is open (waiting, running or writing).',
      () => stats.completionsInFlight,
      [],
    );
    counter(
      'iop_sim_requests_aborted_total',
      'Chat completion requests whose client closed the connection before the end.',
      () => stats.completionsAborted,
      [],
    );
    this.success = new Counter({
      name: 'vllm:request_success_total',
      help: 'Count of finished requests by finished_reason.',
      labelNames: ['model_name', 'finished_reason'],
      registers,
    });
    this.promptTokens = new Counter({
      name: 'vllm:prompt_tokens_total',
      help: 'Number of prefill tokens processed.',
      labelNames,
      registers,
    });
    this.generationTokens = new Counter({
      name: 'vllm:generation_tokens_total',
      help: 'Number of generation tokens processed.',
      labelNames,
      registers,
    });
    const histogram = (name: string, help: string, buckets: number[]) =>
      new Histogram({ name, help, labelNames, buckets, registers });
    this.ttft = histogram(
      'vllm:time_to_first_token_seconds',
      'Histogram of time to first token in seconds.',
      TTFT_BUCKETS,
    );
    this.e2e = histogram(
      'vllm:e2e_request_latency_seconds',
      'Histogram of e2e request latency in seconds.',
      LATENCY_BUCKETS,
    );
    this.queueTime = histogram(
      'vllm:request_queue_time_seconds',
      'Histogram of time spent in WAITING phase for request.',
      LATENCY_BUCKETS,
    );
    this.prefillTime = histogram(
      'vllm:request_prefill_time_seconds',
      'Histogram of time spent in PREFILL phase for request.',
      LATENCY_BUCKETS,
    );
    this.decodeTime = histogram(
      'vllm:request_decode_time_seconds',
      'Histogram of time spent in DECODE phase for request.',
      LATENCY_BUCKETS,
    );
    this.tpot = histogram(
      'vllm:request_time_per_output_token_seconds',
      'Histogram of time_per_output_token_seconds per request.',
      TPOT_BUCKETS,
    );
    this.promptSize = histogram('vllm:request_prompt_tokens', 'Number of prefill tokens processed.', TOKEN_BUCKETS);
    this.generationSize = histogram(
      'vllm:request_generation_tokens',
      'Number of generation tokens processed.',
      TOKEN_BUCKETS,
    );
  }

  /** Records one ended sequence (the scheduler's `onEnd`). */
  observe({ sequence, reason, releasedAt }: SequenceEnd): void {
    const labels = this.labels;
    this.success.inc({ ...labels, finished_reason: reason });
    if (sequence.admittedAt === 0) return; // aborted while waiting: never reached the GPU
    const seconds = (ms: number) => Math.max(0, ms) / 1000;
    this.promptTokens.inc(labels, sequence.promptTokens);
    this.generationTokens.inc(labels, sequence.generatedTokens);
    this.queueTime.observe(labels, seconds(sequence.admittedAt - sequence.queuedAt));
    this.prefillTime.observe(labels, seconds(Math.min(releasedAt, sequence.firstTokenAt) - sequence.admittedAt));
    this.promptSize.observe(labels, sequence.promptTokens);
    this.generationSize.observe(labels, sequence.generatedTokens);
    this.e2e.observe(labels, seconds(releasedAt - sequence.queuedAt));
    if (sequence.generatedTokens === 0) return;
    this.ttft.observe(labels, seconds(sequence.firstTokenAt - sequence.queuedAt));
    this.decodeTime.observe(labels, seconds(releasedAt - sequence.firstTokenAt));
    if (sequence.generatedTokens > 1)
      this.tpot.observe(labels, seconds((releasedAt - sequence.firstTokenAt) / (sequence.generatedTokens - 1)));
  }

  /** The Prometheus text exposition. */
  text(): Promise<string> {
    return this.registry.metrics();
  }
}
