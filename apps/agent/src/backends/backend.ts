/**
 * What the agent needs from a model server: one HTTP-shaped call per run, the models it serves,
 * and optional load figures for heartbeats. Both backends speak OpenAI Chat Completions
 * (docs/protocols.md "Chat Completions"), so the edge relays their bytes unchanged.
 * The call itself (`BackendCall`, its request and response) is `@iop/backend`'s.
 */
import type { BackendCall } from '@iop/backend';

export type { BackendCall, BackendRequest, BackendResponse } from '@iop/backend';

/** A model as registered with the edge (proto `ModelInfo`). */
export interface ModelInfo {
  id: string;
  /** Context window, tokens; 0 when unknown. */
  contextLength: number;
  /** The APIs the backend serves it with (`ServedApi`); absent when it does not tell (every API is tried). */
  apis?: readonly ServedApi[];
}

/**
 * The API families a backend may serve a model with (proto `ModelInfo.apis`): `chat`
 * (`POST /v1/chat/completions`), `completions` (`POST /v1/completions`), `embeddings`
 * (`POST /v1/embeddings`), `rerank` (`POST /v1/rerank` and `/v1/score`).
 */
export const SERVED_APIS = ['chat', 'completions', 'embeddings', 'rerank'] as const;
export type ServedApi = (typeof SERVED_APIS)[number];

/** Backend load, for heartbeats. A figure the backend does not expose is left out. */
export interface BackendMetrics {
  /** KV-cache usage in [0, 1]. */
  kvCacheUsage?: number;
  /** Requests waiting inside the backend. */
  waiting?: number;
}

export type BackendKind = 'openai' | 'llamacpp';

/** What else shapes a chat prompt's tokens (vLLM `TokenizeChatRequest`). */
export interface ChatTokenizeOptions {
  /** The request's `tools` (a chat template renders them into the prompt). */
  tools?: unknown;
  /**
   * Append the assistant turn's opening (true for a whole prompt as it was served, false for a leading part of it).
   * Default true.
   */
  addGenerationPrompt?: boolean;
  signal?: AbortSignal;
}

export interface Backend extends BackendCall {
  readonly kind: BackendKind;
  /** The served models; may call the backend (discovery). Throws when the backend is unreachable. */
  models(): Promise<ModelInfo[]>;
  /** Optional capabilities for registration, e.g. `tokenize`. Valid after `models()`. */
  readonly capabilities: string[];
  metrics?(): Promise<BackendMetrics>;
  /**
   * Token ids of a chat prompt as the server builds it (vLLM / SGLang `POST /tokenize` with
   * `messages`: the chat template applied), off any run's path.
   * @throws Error when the server does not answer 200 with `tokens`.
   */
  tokenizeChat?(model: string, messages: readonly unknown[], options?: ChatTokenizeOptions): Promise<number[]>;
  close(): Promise<void>;
}
