/**
 * The contract of an API the edge relays as it is (the passthrough path of `request/inference.ts`:
 * `open-run.ts` → `relay.ts`): the backend answers in the client's own wire format, so the edge
 * validates the body, routes it by model, relays the answer's bytes and bills its usage. Chat
 * Completions (when no gate filter needs the content), embeddings, legacy completions, rerank and
 * score are such APIs; each is one `PassthroughApi` (`chat.ts`, `auxiliary.ts`), mounted by
 * `routes.ts`.
 */
import type { PrefixKeys } from '../pool/prefix-keys.js';

/**
 * The API families a provider may serve a model with (proto `ModelInfo.apis`): a request is
 * routed only to providers that serve its family (`served-apis.ts`).
 */
export type ServedApi = 'chat' | 'completions' | 'embeddings' | 'rerank';

/** One validated request, ready to relay. */
export interface PassthroughRequest {
  /** The client's model name. */
  model: string;
  stream: boolean;
  /** The client asked for `stream_options.include_usage` (exactly one usage chunk). */
  includeUsage: boolean;
  /** Choices a complete stream finishes, when more than one (legacy completions: prompts × `n`). */
  choices?: number;
  /** The backend body for a served model id (called once per attempt). */
  bodyFor(servedModel: string): Uint8Array;
  /** The prompt's token estimate, for a request billed without the backend's usage. */
  promptTokens(): number;
  /**
   * Rewrites a whole non-stream 2xx answer for the client (e.g. embeddings as base64); @throws IopError
   * `upstream_error`.
   */
  finishAnswer?(body: Buffer): Buffer;
  /** Prefix-affinity key (routing requests that share a prompt prefix to one provider). */
  affinityKey?(prefixMessages: number): number | undefined;
  /** Prefix keys (cache-aware routing, pool/prefix-keys.ts) of a body with `messages`. */
  prefixKeys?(): PrefixKeys | undefined;
}

export interface PassthroughApi {
  /** The family its providers must serve. */
  readonly api: ServedApi;
  /** Path of the backend's endpoint (`POST`). */
  readonly backendPath: string;
  /**
   * Validates the client's JSON body (`raw`: its bytes, parsed as `body`).
   * @throws IopError `invalid_request` (400, `param` naming the field).
   */
  read(body: Record<string, unknown>, raw: Buffer): PassthroughRequest;
}
