/**
 * The wire shapes of the JSON APIs the edge relays beside Chat Completions (docs/protocols.md
 * "Embeddings", "Legacy completions", "Rerank and score"; OpenAI API reference "Embeddings",
 * "Completions"; vLLM's rerank and score servers).
 */

/** `POST /v1/embeddings` `data[]` entry: a float vector, or its little-endian float32 bytes in base64. */
export interface EmbeddingObject {
  object: 'embedding';
  index: number;
  embedding: number[] | string;
}

export interface EmbeddingsResponse {
  object: 'list';
  data: EmbeddingObject[];
  model: string;
  usage: { prompt_tokens: number; total_tokens: number };
}

/** `POST /v1/rerank` `results[]` entry: `index` into the request's `documents`. */
export interface RerankResult {
  index: number;
  relevance_score: number;
  document?: { text: string };
}

/**
 * What the edge needs of a validated request to relay it: the model the client asked for, whether
 * it streams (and asked for a usage chunk), a prompt estimate in tokens (~4 characters per
 * token: billing when no usage comes back), and the body fields to change for the backend.
 */
export interface AuxiliaryRequest {
  model: string;
  stream: boolean;
  includeUsage: boolean;
  promptTokensEstimate: number;
  /** Fields set in the backend body (the client's other fields pass as they are). */
  backendFields: Record<string, unknown>;
}
