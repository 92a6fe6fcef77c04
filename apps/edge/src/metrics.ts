/**
 * Prometheus metrics (prom-client), served at `GET /metrics`. Label sets are small and bounded:
 * model names come from configured groups and registered agents, never from raw client input
 * (`knownModel` maps other names to "unknown"); `agent` is a registered agent or direct provider id.
 *
 * iop's own series (`iop_*`) and the OpenTelemetry GenAI semantic conventions for model servers
 * (https://opentelemetry.io/docs/specs/semconv/gen-ai/gen-ai-metrics/), in their Prometheus form
 * (dots become underscores, the unit `s` becomes `_seconds`): `gen_ai_server_request_duration_seconds`,
 * `gen_ai_server_time_to_first_token_seconds`, `gen_ai_server_time_per_output_token_seconds` and
 * `gen_ai_client_token_usage`, with the attributes `gen_ai_operation_name`, `gen_ai_provider_name`
 * (required by the conventions: the answering provider's `providerNameOf`, pool/provider.ts —
 * its `gen_ai.provider.name` label, `llama.cpp` for an agent's embedded llama.cpp, else
 * `openai_compatible`; `none` when no provider was picked), `gen_ai_request_model`,
 * `gen_ai_response_model`, `error_type` (on the duration of failed requests only: the conventions
 * set `error.type` only on errors, so a success has no `error_type` label at all) and
 * `gen_ai_token_type` on token usage; bucket boundaries are the ones the conventions advise.
 *
 * Per-key series (`iop_key_requests_total`, `iop_key_tokens_total`) exist only with
 * `metrics.keyLabels.enabled`; their `key` label is bounded (telemetry/key-labels.ts).
 *
 * Token counting: `iop_tokens_total{kind}` has four kinds, and two are parts of the others —
 * `cached` ⊂ `prompt`, `reasoning` ⊂ `completion` — so total tokens are prompt + completion, never
 * the sum of all kinds.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Usage } from '@iop/core';
import { ProviderTunnelFrame_Kind } from '@iop/proto';
import { KeyLabels, type KeyLabelsConfig } from './telemetry/key-labels.js';

/** `kind` label of each frame kind: its enum name in lower case (`response_start`, `body`, …). */
const FRAME_KIND_LABELS: string[] = [];
for (const [name, value] of Object.entries(ProviderTunnelFrame_Kind))
  if (typeof value === 'number') FRAME_KIND_LABELS[value] = name.toLowerCase();

const SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

/** What the edge records once per client request (`EdgeMetrics.recordRequest`). */
export interface RequestObservation {
  dialect: string;
  /** The requested model as a bounded label (`knownModel`). */
  model: string;
  /** The served model id of the provider that answered, if one was picked. */
  servedModel: string | undefined;
  /** The agent or direct provider that answered, if one was picked. */
  agent: string | undefined;
  /** Its `gen_ai.provider.name` (`providerNameOf`), if one was picked. */
  providerName: string | undefined;
  /** The client key's id (`KeyIdentity.keyId`), for the per-key series. */
  keyId: string | undefined;
  status: number;
  /** Request arrival to end, s. */
  durationSeconds: number;
  /** Arrival to the first body byte sent to the client, s (streams). */
  ttftSeconds: number | undefined;
  usage: Usage | undefined;
  /** The error code when the request failed (`error.type`). */
  errorType: string | undefined;
  /** How the answer was produced (`ResponseLabels`). */
  response: ResponseLabels;
}

/**
 * How an answer was produced, as bounded labels: `mode` is `passthrough` (backend bytes relayed),
 * `normalized` (decoded and re-encoded through the stream gate) or `none` (rejected before either
 * path was taken); `policy` is the gate's release policy (`evidence-tail`, `buffered`,
 * `passthrough`), followed by `+` and the `agent-output` mode when one is configured (e.g.
 * `buffered+strict`), or `none` on the passthrough path.
 */
export interface ResponseLabels {
  mode: 'passthrough' | 'normalized' | 'none';
  policy: string;
}

/** The labels of a request that took neither path. */
export const NO_RESPONSE_MODE: ResponseLabels = { mode: 'none', policy: 'none' };
/** The labels of a relayed answer (no gate policy applies). */
export const PASSTHROUGH_LABELS: ResponseLabels = { mode: 'passthrough', policy: 'none' };

/** Current agent counts, read at scrape time. */
export interface AgentCounts {
  connected: number;
  /** Connected, not draining, not ejected by any group's outlier detector. */
  healthy: number;
  draining: number;
  /** Per agent: runs in flight and its max concurrency. */
  agents: Array<{
    agent: string;
    inFlight: number;
    maxConcurrency: number;
    queued: number;
    kvCacheUsage: number | undefined;
  }>;
}

export class EdgeMetrics {
  readonly registry = new Registry();
  readonly requests = new Counter({
    name: 'iop_requests_total',
    help: 'Client requests by dialect, requested model, served model, agent (provider), HTTP status, response mode (passthrough, normalized, none) and gate policy; served_model and agent are "none" when no provider was picked.',
    labelNames: ['dialect', 'model', 'served_model', 'agent', 'status', 'mode', 'policy'] as const,
    registers: [this.registry],
  });
  readonly inFlight = new Gauge({
    name: 'iop_requests_in_flight',
    help: 'Client requests being answered now, by dialect and requested model (queued ones included).',
    labelNames: ['dialect', 'model'] as const,
    registers: [this.registry],
  });
  readonly websocketConnections = new Gauge({
    name: 'iop_websocket_connections',
    help: 'Open Responses WebSocket connections (responses run on them are counted as requests of dialect openai-responses).',
    registers: [this.registry],
  });
  readonly websocketRefusals = new Counter({
    name: 'iop_websocket_refusals_total',
    help: 'Responses WebSocket upgrades refused, by HTTP status (401 key, 426 turned off, 429 per-key cap, 503 edge cap or shutdown).',
    labelNames: ['status'] as const,
    registers: [this.registry],
  });
  readonly tokens = new Counter({
    name: 'iop_tokens_total',
    help: 'Tokens by model and kind: prompt, completion, cached (a part of prompt) and reasoning (a part of completion) — total = prompt + completion. Tokens of discarded attempts have attempt="failed". mode and policy as on iop_requests_total.',
    labelNames: ['model', 'kind', 'attempt', 'mode', 'policy'] as const,
    registers: [this.registry],
  });
  readonly duration = new Histogram({
    name: 'iop_request_duration_seconds',
    help: 'End-to-end request duration at the edge.',
    labelNames: ['dialect', 'model'] as const,
    buckets: SECONDS,
    registers: [this.registry],
  });
  readonly ttft = new Histogram({
    name: 'iop_time_to_first_token_seconds',
    help: 'Time from request arrival to the first body byte sent to the client (streams).',
    labelNames: ['dialect', 'model'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });
  readonly timePerOutputToken = new Histogram({
    name: 'iop_time_per_output_token_seconds',
    help: 'Inter-token latency of streams: (end - first byte) / (completion tokens - 1).',
    labelNames: ['dialect', 'model'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 1, 2.5],
    registers: [this.registry],
  });
  /** Reads the agent counts at scrape time (`observeAgents`). */
  private readAgents: () => AgentCounts = () => ({ connected: 0, healthy: 0, draining: 0, agents: [] });
  readonly agents = new Gauge({
    name: 'iop_agents',
    help: 'Agents by state: connected (all), healthy (not draining, not ejected), draining.',
    labelNames: ['state'] as const,
    registers: [this.registry],
    collect: () => {
      const counts = this.readAgents();
      this.agents.set({ state: 'connected' }, counts.connected);
      this.agents.set({ state: 'healthy' }, counts.healthy);
      this.agents.set({ state: 'draining' }, counts.draining);
      this.agentInFlight.reset();
      this.agentMaxConcurrency.reset();
      this.agentQueued.reset();
      this.agentKvCache.reset();
      for (const agent of counts.agents) {
        const labels = { agent: agent.agent };
        this.agentInFlight.set(labels, agent.inFlight);
        this.agentMaxConcurrency.set(labels, agent.maxConcurrency);
        this.agentQueued.set(labels, agent.queued);
        if (agent.kvCacheUsage !== undefined) this.agentKvCache.set(labels, agent.kvCacheUsage);
      }
    },
  });
  // Set by `agents`' collect (registered first, so collected first).
  readonly agentInFlight = new Gauge({
    name: 'iop_pool_agent_in_flight_runs',
    help: 'Runs in flight on each connected agent, as the edge counts them.',
    labelNames: ['agent'] as const,
    registers: [this.registry],
  });
  readonly agentMaxConcurrency = new Gauge({
    name: 'iop_pool_agent_max_concurrency',
    help: 'Max concurrency each connected agent registered.',
    labelNames: ['agent'] as const,
    registers: [this.registry],
  });
  readonly agentQueued = new Gauge({
    name: 'iop_pool_agent_queued',
    help: "Requests queued on each agent (its own queue and its backend's waiting requests), from its heartbeats.",
    labelNames: ['agent'] as const,
    registers: [this.registry],
  });
  readonly agentKvCache = new Gauge({
    name: 'iop_pool_agent_kv_cache_usage_ratio',
    help: "KV-cache usage of each agent's backend in [0, 1], from its heartbeats (when the backend reports it).",
    labelNames: ['agent'] as const,
    registers: [this.registry],
  });
  /**
   * Frames (by `ProviderTunnelFrame_Kind`) and bytes received on Run calls: plain numbers on the
   * per-frame path, read into the two counters below at each scrape.
   */
  readonly tunnelTally = { frames: [] as number[], bytes: 0 };
  readonly tunnelFrames = new Counter({
    name: 'iop_tunnel_frames_total',
    help: 'ProviderTunnelFrames received from agents on Run calls, by kind.',
    labelNames: ['kind'] as const,
    registers: [this.registry],
    collect: () => {
      this.tunnelFrames.reset();
      const frames = this.tunnelTally.frames;
      for (let kind = 0; kind < frames.length; kind++) {
        const count = frames[kind];
        if (count !== undefined && count > 0)
          this.tunnelFrames.inc({ kind: FRAME_KIND_LABELS[kind] ?? String(kind) }, count);
      }
    },
  });
  readonly tunnelBytes = new Counter({
    name: 'iop_tunnel_bytes_total',
    help: 'Bytes received from agents on Run calls (direction="agent_to_edge"), gRPC framing included.',
    labelNames: ['direction'] as const,
    registers: [this.registry],
    collect: () => {
      this.tunnelBytes.reset();
      if (this.tunnelTally.bytes > 0) this.tunnelBytes.inc({ direction: 'agent_to_edge' }, this.tunnelTally.bytes);
    },
  });

  // OpenTelemetry GenAI semantic conventions (Prometheus form).
  readonly genAiDuration = new Histogram({
    name: 'gen_ai_server_request_duration_seconds',
    help: 'GenAI server request duration (OpenTelemetry gen_ai.server.request.duration).',
    labelNames: [
      'gen_ai_operation_name',
      'gen_ai_provider_name',
      'gen_ai_request_model',
      'gen_ai_response_model',
      'error_type',
    ] as const,
    buckets: [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92],
    registers: [this.registry],
  });
  readonly genAiTtft = new Histogram({
    name: 'gen_ai_server_time_to_first_token_seconds',
    help: 'Time to generate the first token (OpenTelemetry gen_ai.server.time_to_first_token).',
    labelNames: [
      'gen_ai_operation_name',
      'gen_ai_provider_name',
      'gen_ai_request_model',
      'gen_ai_response_model',
    ] as const,
    buckets: [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10],
    registers: [this.registry],
  });
  readonly genAiTpot = new Histogram({
    name: 'gen_ai_server_time_per_output_token_seconds',
    help: 'Time per output token after the first (OpenTelemetry gen_ai.server.time_per_output_token).',
    labelNames: [
      'gen_ai_operation_name',
      'gen_ai_provider_name',
      'gen_ai_request_model',
      'gen_ai_response_model',
    ] as const,
    buckets: [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5],
    registers: [this.registry],
  });
  readonly genAiTokens = new Histogram({
    name: 'gen_ai_client_token_usage',
    help: 'Tokens per request by gen_ai_token_type input or output (OpenTelemetry gen_ai.client.token.usage).',
    labelNames: [
      'gen_ai_operation_name',
      'gen_ai_provider_name',
      'gen_ai_request_model',
      'gen_ai_response_model',
      'gen_ai_token_type',
    ] as const,
    buckets: [1, 4, 16, 64, 256, 1024, 4096, 16_384, 65_536, 262_144, 1_048_576, 4_194_304, 16_777_216, 67_108_864],
    registers: [this.registry],
  });

  /** The per-key series and their bounded `key` label, when `metrics.keyLabels.enabled`. */
  private readonly perKey:
    | { labels: KeyLabels; requests: Counter<'key' | 'model' | 'status'>; tokens: Counter<'key' | 'model' | 'kind'> }
    | undefined;

  constructor(options: { keyLabels?: KeyLabelsConfig | undefined } = {}) {
    if (options.keyLabels?.enabled === true) {
      this.perKey = {
        labels: new KeyLabels(options.keyLabels),
        requests: new Counter({
          name: 'iop_key_requests_total',
          help: 'Client requests by client key id (bounded: metrics.keyLabels; the rest are key="other"), requested model and HTTP status.',
          labelNames: ['key', 'model', 'status'] as const,
          registers: [this.registry],
        }),
        tokens: new Counter({
          name: 'iop_key_tokens_total',
          help: 'Tokens of the answers by client key id (as on iop_key_requests_total), requested model and kind: prompt or completion.',
          labelNames: ['key', 'model', 'kind'] as const,
          registers: [this.registry],
        }),
      };
    }
    // Event-loop lag sampled every 100 ms (prom-client's default 10 ms wakes an idle edge 100 times a second).
    collectDefaultMetrics({ register: this.registry, prefix: 'iop_edge_', eventLoopMonitoringPrecision: 100 });
  }

  /**
   * Reads agent counts at every scrape (`iop_agents`, `iop_pool_agent_in_flight_runs`,
   * `iop_pool_agent_max_concurrency`).
   */
  observeAgents(read: () => AgentCounts): void {
    this.readAgents = read;
  }

  /** Records one finished (or failed) client request in every request series, iop's and GenAI's. */
  recordRequest(o: RequestObservation): void {
    // Each label set is an object literal of one shape (no spreads): prom-client walks every label
    // object with for-in to validate it, and spread-built objects made this ~18 µs per request.
    const { dialect, model } = o;
    const served = o.servedModel ?? 'none';
    const base = { dialect, model };
    this.requests.inc({
      dialect,
      model,
      served_model: served,
      agent: o.agent ?? 'none',
      status: String(o.status),
      mode: o.response.mode,
      policy: o.response.policy,
    });
    this.duration.observe(base, o.durationSeconds);
    const provider = o.providerName ?? 'none';
    const genAi = {
      gen_ai_operation_name: 'chat',
      gen_ai_provider_name: provider,
      gen_ai_request_model: model,
      gen_ai_response_model: served,
    };
    if (this.perKey !== undefined && o.keyId !== undefined) this.recordKey(this.perKey, o);
    if (o.errorType !== undefined) {
      // `error.type` only on errors (the conventions): a success's series have no such label.
      this.genAiDuration.observe(
        {
          gen_ai_operation_name: 'chat',
          gen_ai_provider_name: provider,
          gen_ai_request_model: model,
          gen_ai_response_model: served,
          error_type: o.errorType,
        },
        o.durationSeconds,
      );
      return;
    }
    this.genAiDuration.observe(genAi, o.durationSeconds);
    if (o.ttftSeconds !== undefined) {
      this.genAiTtft.observe(genAi, o.ttftSeconds);
      const output = o.usage?.outputTokens ?? 0;
      if (output > 1) {
        const perToken = (o.durationSeconds - o.ttftSeconds) / (output - 1);
        this.timePerOutputToken.observe(base, perToken);
        this.genAiTpot.observe(genAi, perToken);
      }
    }
    const usage = o.usage;
    if (usage?.inputTokens !== undefined) {
      this.genAiTokens.observe(
        {
          gen_ai_operation_name: 'chat',
          gen_ai_provider_name: provider,
          gen_ai_request_model: model,
          gen_ai_response_model: served,
          gen_ai_token_type: 'input',
        },
        usage.inputTokens,
      );
    }
    if (usage?.outputTokens !== undefined) {
      this.genAiTokens.observe(
        {
          gen_ai_operation_name: 'chat',
          gen_ai_provider_name: provider,
          gen_ai_request_model: model,
          gen_ai_response_model: served,
          gen_ai_token_type: 'output',
        },
        usage.outputTokens,
      );
    }
  }

  private recordKey(perKey: NonNullable<EdgeMetrics['perKey']>, o: RequestObservation): void {
    const key = perKey.labels.label(o.keyId!);
    perKey.requests.inc({ key, model: o.model, status: String(o.status) });
    const input = o.usage?.inputTokens ?? 0;
    const output = o.usage?.outputTokens ?? 0;
    if (input > 0) perKey.tokens.inc({ key, model: o.model, kind: 'prompt' }, input);
    if (output > 0) perKey.tokens.inc({ key, model: o.model, kind: 'completion' }, output);
  }
}
