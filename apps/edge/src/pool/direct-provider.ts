/**
 * A direct provider: an OpenAI-compatible server (vLLM, SGLang, llama.cpp server, a hosted API)
 * reached from the edge itself over HTTP with undici, no agent in between. It yields the same
 * frames an agent's run does (RESPONSE_START, BODY…, USAGE?, END | ERROR with the agent's error
 * codes: `connect_failed`, `backend_reset`, `first_byte_timeout`, `idle_timeout`, `cancelled`,
 * `internal`), so routing, retries and both output paths treat it like a tunnelled agent.
 *
 * The run's path (`/v1/chat/completions`) is joined to the base URL (`http://host:8000/v1`): a
 * base path ending in `/v1` is not repeated. The client's credentials never go upstream; the
 * configured `apiKey` is sent as `Authorization: Bearer`.
 *
 * The HTTP call is `@iop/backend`'s `OpenAiClient` and the frames come from its `relayBackend`
 * (both shared with the agent), so a direct provider and a tunnelled agent relay a backend the same way:
 * backpressure (the backend body pauses while the run's frame queue is full),
 * timeouts (no first body byte within `firstByteTimeoutMs` — the run request's value when > 0 —,
 * no next slice within `idleTimeoutMs`, no connection within `connectTimeoutMs`), usage, and the
 * failure codes.
 */
import { injectActive, newId } from '@iop/core';
import type { ProviderTunnelFrame } from '@iop/proto';
import { FrameKind, OpenAiClient, RunErrorCode, RunFailure, basePathOf, relayBackend } from '@iop/backend';
import { AsyncQueue } from '@iop/core';
import type { DirectProviderConfig } from './pool-config.js';
import { providerNameOf, type PoolProvider, type ProviderLoad } from './provider.js';
import type { RunRequest, RunStream } from './run-stream.js';

class DirectRun implements RunStream {
  readonly runId = newId('run_');
  readonly frames = new AsyncQueue<ProviderTunnelFrame>(32);
  readonly controller = new AbortController();
  /** The backend request is sent as the run starts. */
  readonly accepted = true;
  private finished = false;

  constructor(
    readonly providerId: string,
    private readonly onFinish: () => void,
  ) {}

  get isFinished(): boolean {
    return this.finished;
  }

  cancel(reason: string): void {
    if (!this.controller.signal.aborted) this.controller.abort(new RunFailure(RunErrorCode.CANCELLED, reason));
    this.finish();
  }

  /** Queues a frame; resolves when the consumer can take more. */
  push(frame: ProviderTunnelFrame): Promise<void> | undefined {
    if (this.finished) return undefined;
    const pending = this.frames.push(frame);
    if (frame.kind === FrameKind.END || frame.kind === FrameKind.ERROR) this.finish();
    return pending;
  }

  finish(): void {
    if (this.finished) return;
    this.finished = true;
    this.frames.close();
    this.onFinish();
  }
}

export class DirectProvider implements PoolProvider {
  readonly kind = 'direct' as const;
  readonly id: string;
  readonly maxConcurrency: number;
  readonly weight: number;
  readonly labels: Readonly<Record<string, string>>;
  readonly providerName: string;
  inFlight = 0;
  load: ProviderLoad = { queued: 0 };
  private readonly models: ReadonlySet<string>;
  private readonly backend: OpenAiClient;
  /** The base URL's path without a trailing `/v1` (run paths carry their own `/v1`). */
  private readonly basePath: string;
  private closed = false;
  /** Set while retiring: called when the last run in flight ends. */
  private onIdle: (() => void) | undefined;

  /** @param onRelease called whenever a run ends (a slot frees). */
  constructor(
    private readonly config: DirectProviderConfig,
    private readonly onRelease?: () => void,
  ) {
    this.id = config.id;
    this.maxConcurrency = config.maxConcurrency;
    this.weight = config.weight;
    this.labels = config.labels;
    this.providerName = providerNameOf(config.labels, 'openai');
    this.models = new Set(config.models);
    this.basePath = basePathOf(config.baseUrl);
    this.backend = new OpenAiClient({
      baseUrl: config.baseUrl,
      apiKey: config.apiKey,
      connections: config.maxConcurrency,
      connectTimeoutMs: config.connectTimeoutMs,
    });
  }

  get available(): boolean {
    return !this.closed && this.inFlight < this.maxConcurrency;
  }

  get accepting(): boolean {
    return !this.closed;
  }

  /** The served model ids of its config. */
  get servedModels(): readonly string[] {
    return this.config.models;
  }

  serves(model: string): boolean {
    return this.models.has(model);
  }

  contextLength(): number | undefined {
    return undefined;
  }

  /** The upstream URL path for a run path (`/v1/chat/completions`): a base path ending in `/v1` is not repeated. */
  upstreamPath(path: string): string {
    return this.basePath + path;
  }

  start(request: RunRequest): RunStream {
    this.inFlight++;
    const run = new DirectRun(this.id, () => {
      if (this.inFlight > 0) this.inFlight--;
      this.onRelease?.();
      if (this.inFlight === 0) this.onIdle?.();
    });
    void this.execute(run, request);
    return run;
  }

  /**
   * Takes no new run from now on (`accepting` and `available` turn false) but lets the runs in
   * flight finish; closes the connections once the last one has ended (config reload removed or
   * replaced the provider). Resolves then.
   */
  retire(): Promise<void> {
    this.closed = true;
    if (this.inFlight === 0) return this.close();
    return new Promise<void>((resolve) => (this.onIdle = resolve)).then(() => this.close());
  }

  /** Stops taking runs and closes its connections (runs in flight are aborted). */
  async close(): Promise<void> {
    this.closed = true;
    await this.backend.close().catch(() => undefined);
  }

  private async execute(run: DirectRun, request: RunRequest): Promise<void> {
    const headers: Record<string, string> = { ...(request.headers ?? {}) };
    if (request.idempotencyKey !== undefined && request.idempotencyKey !== '')
      headers['idempotency-key'] = request.idempotencyKey;
    injectActive(headers); // the attempt's traceparent (telemetry/request-tracing.ts), for servers that trace
    try {
      await relayBackend(
        this.backend,
        {
          runId: run.runId,
          requestId: request.requestId,
          method: request.method,
          path: request.path,
          headers,
          body: request.body,
          firstByteTimeoutMs:
            request.firstByteTimeoutMs !== undefined && request.firstByteTimeoutMs > 0
              ? request.firstByteTimeoutMs
              : this.config.firstByteTimeoutMs,
          idleTimeoutMs: this.config.idleTimeoutMs,
        },
        run.controller,
        // A cancelled run drops what the relay still pushes (cancel aborted the backend request).
        (frame) => run.push(frame),
      );
    } finally {
      run.finish();
    }
  }
}
