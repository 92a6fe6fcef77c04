/**
 * Agent options: defaults, parsing of CLI/env strings, and validation up front. Every error names
 * the flag and its exact limits.
 */
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { Backend, BackendKind } from './backends/backend.js';

export type GpuOption = 'auto' | 'none' | 'cuda' | 'vulkan' | 'metal';
const GPUS: readonly GpuOption[] = ['auto', 'none', 'cuda', 'vulkan', 'metal'];
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export interface AgentOptions {
  /** Edge tunnel URL (`http://` = h2c, `https://` = TLS); the first of `edgeUrls`. Default `http://127.0.0.1:8081`. */
  edgeUrl: string;
  /** Every edge to serve (`--edge a,b`): one Control session per edge, runs from any. */
  edgeUrls: string[];
  /** Shared secret of the edge's pool. Default empty. */
  joinToken: string;
  /** Default `<hostname>`. */
  agentId: string;
  /** Default `llamacpp` (embedded). */
  backend: BackendKind;
  /** `openai` backend: base URL of the OpenAI-compatible server (required). */
  backendUrl: string | undefined;
  /** `openai` backend: key sent as `Authorization: Bearer`. */
  backendApiKey: string | undefined;
  /** `openai` backend: served model names, skipping discovery. */
  models: string[] | undefined;
  /** `llamacpp` backend: GGUF path or `hf:owner/repo/file.gguf`; default stories260K.gguf from the models search path. */
  model: string | undefined;
  /** `llamacpp` backend: CPU threads; default cores - 1 (at least 1, at most 32), leaving a core to the event loop. */
  threads: number | undefined;
  gpu: GpuOption;
  /** `llamacpp` backend: context size per sequence, tokens; default the model's training context (at most 8192). */
  contextSize: number | undefined;
  /** Runs at once. Default 4 for `llamacpp` (one sequence each), 16 for `openai`. */
  maxConcurrency: number;
  labels: Record<string, string>;
  /** Heartbeat period when the edge gives none, ms. Default 5 000. */
  heartbeatMs: number;
  /** Default first-byte timeout of a run (the assignment may override), ms. Default 120 000 (a non-stream answer arrives whole). */
  firstByteTimeoutMs: number;
  /** Longest gap between body slices from the backend, ms. Default 60 000. */
  idleTimeoutMs: number;
  /** PEM file of the CA that signs the edge's certificate (TLS). */
  tlsCa: string | undefined;
  logLevel: string;
  /** SIGTERM / shutdown(): longest wait for in-flight runs, ms. Default 30 000. */
  shutdownDeadlineMs: number;
  /** Reconnect backoff: first ceiling and cap, ms (full jitter). Defaults 250 and 10 000. */
  reconnectBaseMs: number;
  reconnectCapMs: number;
  /** Extra uniform random delay before reconnecting after a lost edge, ms (spreads reconnect storms). Default 1 000. */
  reconnectJitterMs: number;
  /** A connection registered for this long resets the backoff, ms. Default 10 000. */
  stableConnectionMs: number;
  /** Port of the agent's /healthz, /readyz and /metrics (0 = any free port); undefined = none. The CLI's default is 8082. */
  metricsPort: number | undefined;
  /** Listen address of that port. Default 127.0.0.1. */
  metricsHost: string;
  /** False when the port is only a default: then a port in use is logged and the agent runs without it. Default true. */
  metricsPortRequired: boolean;
  /** Programmatic use: a logger to use instead of a new pino logger on stdout. */
  logger?: Logger;
  /** Programmatic use: a ready backend (the agent closes it on close). */
  backendInstance?: Backend;
}

/** Options as given: numbers may be strings (CLI, env); everything optional. */
export type AgentOptionsInput = {
  [K in keyof AgentOptions]?: AgentOptions[K] extends number | undefined ? number | string : AgentOptions[K] | string;
};

/** Fills defaults and validates; throws an Error naming the option and its limits. */
export function resolveAgentOptions(input: AgentOptionsInput): AgentOptions {
  const backend = oneOf('--backend', input.backend, ['openai', 'llamacpp'] as const, 'llamacpp');
  const backendUrl = optionalString(input.backendUrl);
  if (backend === 'openai' && input.backendInstance === undefined) {
    if (backendUrl === undefined) throw new Error('--backend-url is required with --backend openai');
    httpUrl('--backend-url', backendUrl);
  }
  const edgeUrls = [...new Set(list(input.edgeUrls) ?? list(input.edgeUrl) ?? ['http://127.0.0.1:8081'])];
  for (const url of edgeUrls) httpUrl('--edge', url);
  return {
    edgeUrl: edgeUrls[0]!,
    edgeUrls,
    joinToken: optionalString(input.joinToken) ?? '',
    agentId: optionalString(input.agentId) ?? hostname(),
    backend,
    backendUrl,
    backendApiKey: optionalString(input.backendApiKey),
    models: list(input.models),
    model: optionalString(input.model),
    threads: optionalInteger('--threads', input.threads, 1, 256),
    gpu: oneOf('--gpu', input.gpu, GPUS, 'auto'),
    contextSize: optionalInteger('--context-size', input.contextSize, 16, 1_048_576),
    maxConcurrency: integer('--max-concurrency', input.maxConcurrency, 1, 1024, backend === 'llamacpp' ? 4 : 16),
    labels: labels(input.labels),
    heartbeatMs: integer('--heartbeat-ms', input.heartbeatMs, 100, 600_000, 5_000),
    firstByteTimeoutMs: integer('--first-byte-timeout-ms', input.firstByteTimeoutMs, 100, 3_600_000, 600_000),
    idleTimeoutMs: integer('--idle-timeout-ms', input.idleTimeoutMs, 100, 3_600_000, 60_000),
    tlsCa: optionalString(input.tlsCa),
    logLevel: oneOf('--log-level', input.logLevel, LOG_LEVELS, 'info'),
    shutdownDeadlineMs: integer('--shutdown-deadline-ms', input.shutdownDeadlineMs, 0, 3_600_000, 30_000),
    reconnectBaseMs: integer('reconnectBaseMs', input.reconnectBaseMs, 1, 60_000, 250),
    reconnectCapMs: integer('reconnectCapMs', input.reconnectCapMs, 1, 600_000, 10_000),
    reconnectJitterMs: integer('--reconnect-jitter-ms', input.reconnectJitterMs, 0, 600_000, 1_000),
    stableConnectionMs: integer('stableConnectionMs', input.stableConnectionMs, 0, 3_600_000, 10_000),
    metricsPort: input.metricsPort === 'off' || input.metricsPort === 'none' ? undefined : optionalInteger('--metrics-port', input.metricsPort, 0, 65535),
    metricsHost: optionalString(input.metricsHost) ?? '127.0.0.1',
    metricsPortRequired: input.metricsPortRequired !== false && input.metricsPortRequired !== 'false',
    logger: typeof input.logger === 'object' ? input.logger : undefined,
    backendInstance: typeof input.backendInstance === 'object' ? input.backendInstance : undefined,
  };
}

function optionalString(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function integer(name: string, value: unknown, min: number, max: number, fallback: number): number {
  return optionalInteger(name, value, min, max) ?? fallback;
}

function optionalInteger(name: string, value: unknown, min: number, max: number): number | undefined {
  if (value === undefined || value === '') return undefined;
  const number = typeof value === 'number' ? value : /^-?\d+$/.test(String(value).trim()) ? Number(value) : Number.NaN;
  if (!Number.isInteger(number) || number < min || number > max) {
    throw new Error(`${name} must be an integer in [${min}, ${max}], got ${JSON.stringify(value)}`);
  }
  return number;
}

function oneOf<T extends string>(name: string, value: unknown, allowed: readonly T[], fallback: T): T {
  if (value === undefined || value === '') return fallback;
  if (typeof value === 'string' && (allowed as readonly string[]).includes(value)) return value as T;
  throw new Error(`${name} must be one of ${allowed.join(', ')}, got ${JSON.stringify(value)}`);
}

function httpUrl(name: string, value: string): void {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new Error(`${name} must be an http:// or https:// URL, got ${JSON.stringify(value)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new Error(`${name} must be an http:// or https:// URL, got ${JSON.stringify(value)}`);
  }
}

function list(value: unknown): string[] | undefined {
  if (Array.isArray(value)) return value.length > 0 ? value.map(String) : undefined;
  if (typeof value !== 'string' || value.trim() === '') return undefined;
  return value.split(',').map((item) => item.trim()).filter((item) => item !== '');
}

const LABEL_KEY = /^[A-Za-z0-9][A-Za-z0-9_.\-/]{0,62}$/;

/** `k=v,k2=v2` (or an object) into labels; keys 1–63 chars of `[A-Za-z0-9_.-/]`. */
function labels(value: unknown): Record<string, string> {
  const result: Record<string, string> = {};
  if (value === undefined || value === '') return result;
  const entries: [string, string][] =
    typeof value === 'string'
      ? value.split(',').filter((pair) => pair.trim() !== '').map((pair) => {
          const at = pair.indexOf('=');
          if (at <= 0) throw new Error(`--labels must be k=v pairs separated by commas, got ${JSON.stringify(pair)}`);
          return [pair.slice(0, at).trim(), pair.slice(at + 1).trim()];
        })
      : Object.entries(value as Record<string, string>);
  for (const [key, label] of entries) {
    if (!LABEL_KEY.test(key)) throw new Error(`--labels key ${JSON.stringify(key)} must be 1-63 characters of [A-Za-z0-9_.-/]`);
    result[key] = String(label);
  }
  return result;
}
