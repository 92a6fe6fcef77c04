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
 * Backpressure: the body is read one slice at a time and the next slice is asked for only when
 * the frame queue accepted the previous one, so a slow client pauses the upstream socket (TCP
 * flow control) instead of growing a buffer. Timeouts (own timers, paused while the consumer
 * holds us back): no first body byte within `firstByteTimeoutMs` (the run request's value when
 * > 0), no next slice within `idleTimeoutMs`, no connection within `connectTimeoutMs`.
 */
import { create, type MessageInitShape } from '@bufbuild/protobuf';
import { newId } from '@iop/core';
import { ProviderTunnelFrameSchema, ProviderTunnelFrame_Kind as FrameKind, type ProviderTunnelFrame } from '@iop/proto';
import { UsageScanner, usageBodyKindOf } from '@iop/agent';
import { Pool } from 'undici';
import { AsyncQueue } from '../tunnel/async-queue.js';
import type { RunRequest } from '../tunnel/run-registry.js';
import type { DirectProviderConfig } from './pool-config.js';
import type { PoolProvider, PoolRun } from './pool-provider.js';
import type { ProviderLoad } from './provider.js';

/** Error codes a connection failure carries before any response (undici / node). */
const CONNECT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT']);

/** Response headers not passed on (hop-by-hop, or rewritten by the edge). */
const DROPPED_RESPONSE_HEADERS = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'content-encoding']);

class RunStop extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

function codeOf(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && typeof current === 'object' && current !== null; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

class DirectRun implements PoolRun {
  readonly runId = newId('run_');
  readonly frames = new AsyncQueue<ProviderTunnelFrame>(32);
  private readonly controller = new AbortController();
  private finished = false;

  constructor(
    readonly providerId: string,
    private readonly onFinish: () => void,
  ) {}

  get isFinished(): boolean {
    return this.finished;
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  cancel(reason: string): void {
    this.stop(new RunStop('cancelled', reason));
    this.finish();
  }

  stop(reason: RunStop): void {
    if (!this.controller.signal.aborted) this.controller.abort(reason);
  }

  /** Queues a frame; resolves when the consumer can take more. */
  push(frame: MessageInitShape<typeof ProviderTunnelFrameSchema>): Promise<void> | undefined {
    if (this.finished) return undefined;
    const pending = this.frames.push(create(ProviderTunnelFrameSchema, { ...frame, runId: this.runId }));
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
  inFlight = 0;
  load: ProviderLoad = { queued: 0 };
  private readonly models: ReadonlySet<string>;
  private readonly pool: Pool;
  private readonly pathPrefix: string;
  private closed = false;

  /** @param onRelease called whenever a run ends (a slot frees). */
  constructor(
    private readonly config: DirectProviderConfig,
    private readonly onRelease?: () => void,
  ) {
    this.id = config.id;
    this.maxConcurrency = config.maxConcurrency;
    this.weight = config.weight;
    this.labels = config.labels;
    this.models = new Set(config.models);
    const url = new URL(config.baseUrl);
    this.pathPrefix = url.pathname.replace(/\/+$/, '');
    this.pool = new Pool(url.origin, {
      connections: config.maxConcurrency,
      keepAliveTimeout: 30_000,
      connect: { timeout: config.connectTimeoutMs },
      headersTimeout: 0,
      bodyTimeout: 0,
    });
  }

  get available(): boolean {
    return !this.closed && this.inFlight < this.maxConcurrency;
  }

  get accepting(): boolean {
    return !this.closed;
  }

  serves(model: string): boolean {
    return this.models.has(model);
  }

  contextLength(): number | undefined {
    return undefined;
  }

  /** The upstream URL path for a run path (`/v1/chat/completions`). */
  upstreamPath(path: string): string {
    if (this.pathPrefix.endsWith('/v1') && (path === '/v1' || path.startsWith('/v1/'))) return this.pathPrefix + path.slice(3);
    return this.pathPrefix + path;
  }

  start(request: RunRequest): PoolRun {
    this.inFlight++;
    const run = new DirectRun(this.id, () => {
      if (this.inFlight > 0) this.inFlight--;
      this.onRelease?.();
    });
    void this.execute(run, request);
    return run;
  }

  /** Stops taking runs and closes idle connections. */
  async close(): Promise<void> {
    this.closed = true;
    await this.pool.close().catch(() => undefined);
  }

  private async execute(run: DirectRun, request: RunRequest): Promise<void> {
    const signal = run.signal;
    const firstByteTimeoutMs = request.firstByteTimeoutMs !== undefined && request.firstByteTimeoutMs > 0 ? request.firstByteTimeoutMs : this.config.firstByteTimeoutMs;
    const firstByteTimer = setTimeout(() => run.stop(new RunStop('first_byte_timeout', `no first byte within ${firstByteTimeoutMs} ms`)), firstByteTimeoutMs);
    let idleTimer: NodeJS.Timeout | undefined;
    let started = false;
    try {
      const headers: Record<string, string> = { 'content-type': 'application/json', ...(request.headers ?? {}) };
      delete headers.authorization;
      delete headers['x-api-key'];
      if (this.config.apiKey !== undefined) headers.authorization = `Bearer ${this.config.apiKey}`;
      if (request.idempotencyKey !== undefined && request.idempotencyKey !== '') headers['idempotency-key'] = request.idempotencyKey;
      const response = await this.pool.request({
        method: request.method.toUpperCase() as 'POST',
        path: this.upstreamPath(request.path),
        headers,
        body: request.body,
        signal,
      });
      started = true;
      const responseHeaders: Record<string, string> = {};
      for (const [name, value] of Object.entries(response.headers)) {
        if (value === undefined || DROPPED_RESPONSE_HEADERS.has(name)) continue;
        responseHeaders[name] = Array.isArray(value) ? value.join(', ') : value;
      }
      await run.push({ kind: FrameKind.RESPONSE_START, status: response.statusCode, headers: responseHeaders});
      const usage = new UsageScanner(usageBodyKindOf(responseHeaders['content-type']));
      const body = response.body[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
      let bytes = 0;
      for (;;) {
        if (bytes > 0) {
          idleTimer ??= setTimeout(() => run.stop(new RunStop('idle_timeout', `no body byte for ${this.config.idleTimeoutMs} ms`)), this.config.idleTimeoutMs);
          idleTimer.refresh();
        }
        const slice = await body.next();
        clearTimeout(idleTimer);
        if (slice.done === true) break;
        if (bytes === 0) clearTimeout(firstByteTimer);
        bytes += slice.value.length;
        usage.push(slice.value);
        const pending = run.push({ kind: FrameKind.BODY, body: slice.value});
        if (pending !== undefined) await pending;
        if (run.isFinished) return;
      }
      if (signal.aborted) throw signal.reason;
      const tokens = usage.finish();
      if (tokens !== undefined) await run.push({ kind: FrameKind.USAGE, usage: tokens});
      void run.push({ kind: FrameKind.END});
    } catch (error) {
      const failure = this.failureOf(error, signal, started);
      void run.push({ kind: FrameKind.ERROR, errorCode: failure.code, errorMessage: failure.message});
      run.stop(failure);
    } finally {
      clearTimeout(firstByteTimer);
      clearTimeout(idleTimer);
      run.finish();
    }
  }

  private failureOf(error: unknown, signal: AbortSignal, started: boolean): RunStop {
    if (signal.aborted) {
      const reason: unknown = signal.reason;
      return reason instanceof RunStop ? reason : new RunStop('cancelled', 'run aborted');
    }
    const code = codeOf(error);
    if (code !== undefined && CONNECT_CODES.has(code) && !started) return new RunStop('connect_failed', `${this.id} unreachable (${code})`);
    if (code !== undefined && (code === 'ECONNRESET' || code === 'EPIPE' || code.startsWith('UND_ERR'))) return new RunStop('backend_reset', `${this.id} connection failed (${code})`);
    const message = (error as { message?: unknown } | null)?.message;
    return new RunStop('internal', typeof message === 'string' ? message : 'internal error');
  }
}
