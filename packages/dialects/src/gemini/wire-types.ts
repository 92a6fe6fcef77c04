/**
 * Google Gemini API wire types (https://ai.google.dev/api/generate-content, /api/tokens,
 * /api/models; docs/protocols.md "Gemini"), as far as iop reads or writes them. Keys are
 * lowerCamelCase as the `@google/genai` SDK sends them and, on output, as it requires them (it
 * drops snake_case keys of a response).
 */

export type GeminiRole = 'user' | 'model';

export interface InlineData {
  mimeType: string;
  /** base64 */
  data: string;
}

export interface FunctionCall {
  id?: string;
  name: string;
  args: Record<string, unknown>;
}

export interface FunctionResponse {
  id?: string;
  name: string;
  response: Record<string, unknown>;
}

/**
 * One part: exactly one data field (`text`, `inlineData`, `fileData`, `functionCall`, `functionResponse`) and
 * modifiers.
 */
export interface Part {
  text?: string;
  thought?: boolean;
  thoughtSignature?: string;
  inlineData?: InlineData;
  fileData?: { mimeType?: string; fileUri: string };
  functionCall?: FunctionCall;
  functionResponse?: FunctionResponse;
}

export interface Content {
  role?: GeminiRole;
  parts: Part[];
}

/**
 * `Candidate.finishReason` (GenerateContentResponse reference). There is no tool-call reason: a
 * turn that ends with `functionCall` parts is `STOP`.
 */
export type GeminiFinishReason =
  | 'FINISH_REASON_UNSPECIFIED'
  | 'STOP'
  | 'MAX_TOKENS'
  | 'SAFETY'
  | 'RECITATION'
  | 'LANGUAGE'
  | 'OTHER'
  | 'BLOCKLIST'
  | 'PROHIBITED_CONTENT'
  | 'SPII'
  | 'MALFORMED_FUNCTION_CALL'
  | 'IMAGE_SAFETY'
  | 'UNEXPECTED_TOOL_CALL'
  | 'TOO_MANY_TOOL_CALLS';

export interface Candidate {
  content: { role: 'model'; parts: Part[] };
  finishReason?: GeminiFinishReason;
  index: number;
}

/**
 * `usageMetadata`: `totalTokenCount = promptTokenCount + candidatesTokenCount + thoughtsTokenCount`;
 * `cachedContentTokenCount` is part of `promptTokenCount`.
 */
export interface UsageMetadata {
  promptTokenCount: number;
  candidatesTokenCount: number;
  totalTokenCount: number;
  thoughtsTokenCount?: number;
  cachedContentTokenCount?: number;
}

export interface GenerateContentResponse {
  candidates: Candidate[];
  usageMetadata?: UsageMetadata;
  modelVersion: string;
  responseId: string;
}

/** `countTokens` response. */
export interface CountTokensResponse {
  totalTokens: number;
}

/** One `Model` of `GET /v1beta/models` (https://ai.google.dev/api/models#Model). */
export interface GeminiModel {
  /** `models/<id>`: the prefix is required. */
  name: string;
  baseModelId: string;
  version: string;
  displayName: string;
  description: string;
  inputTokenLimit?: number;
  outputTokenLimit?: number;
  supportedGenerationMethods: string[];
}

export interface ListModelsResponse {
  models: GeminiModel[];
  /** Absent on the last page. */
  nextPageToken?: string;
}

/**
 * `google.rpc.Code` names (https://github.com/googleapis/googleapis/blob/master/google/rpc/code.proto) Gemini answers
 * with.
 */
export type GoogleStatus =
  | 'INVALID_ARGUMENT'
  | 'FAILED_PRECONDITION'
  | 'UNAUTHENTICATED'
  | 'PERMISSION_DENIED'
  | 'NOT_FOUND'
  | 'ABORTED'
  | 'RESOURCE_EXHAUSTED'
  | 'CANCELLED'
  | 'INTERNAL'
  | 'UNIMPLEMENTED'
  | 'UNAVAILABLE'
  | 'DEADLINE_EXCEEDED';

/** Google's error envelope (https://ai.google.dev/gemini-api/docs/troubleshooting; AIP-193). */
export interface GoogleErrorBody {
  error: {
    code: number;
    message: string;
    status: GoogleStatus;
    details?: Array<Record<string, unknown>>;
  };
}

/** What the decoder hands its encoders through `InferenceRequest.dialectState`. */
export interface GeminiState {
  /** Stream as SSE (`alt=sse`); otherwise one JSON array of the chunks. */
  sse: boolean;
  /** `thinkingConfig.includeThoughts`: reasoning goes out as `{text, thought: true}` parts. */
  includeThoughts: boolean;
}
