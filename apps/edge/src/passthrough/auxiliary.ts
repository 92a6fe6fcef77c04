/**
 * Embeddings, legacy completions, rerank and score as passthrough APIs (docs/protocols.md
 * "Embeddings", "Legacy completions", "Rerank and score"): the body is validated by
 * `@iop/dialects`' auxiliary readers (`readEmbeddingsRequest`…) and sent to the backend with the served model id,
 * the reader's field changes, and for a stream `stream_options.include_usage: true` (billing
 * needs the backend's usage; the relay drops the chunk when the client did not ask for it).
 * Embeddings answers are re-encoded as the client asked (`float` or `base64`), rerank answers
 * sorted and cut to `top_n` whatever the backend did.
 */
import {
  type AuxiliaryRequest,
  encodeEmbeddingsAnswer,
  orderRerankAnswer,
  readCompletionsRequest,
  readEmbeddingsRequest,
  readRerankRequest,
  readScoreRequest,
} from '@iop/dialects';
import type { PassthroughApi, PassthroughRequest, ServedApi } from './passthrough-api.js';

function backendBody(body: Record<string, unknown>, request: AuxiliaryRequest, served: string): Buffer {
  const changed: Record<string, unknown> = { ...body, ...request.backendFields, model: served };
  if (request.stream && !request.includeUsage) {
    const options = body.stream_options;
    changed.stream_options = {
      ...(typeof options === 'object' && options !== null ? options : {}),
      include_usage: true,
    };
  }
  return Buffer.from(JSON.stringify(changed));
}

function relayed(
  body: Record<string, unknown>,
  request: AuxiliaryRequest,
  finishAnswer?: (answer: Buffer) => Buffer,
): PassthroughRequest {
  return {
    model: request.model,
    stream: request.stream,
    includeUsage: request.includeUsage,
    bodyFor: (served) => backendBody(body, request, served),
    promptTokens: () => request.promptTokensEstimate,
    ...(finishAnswer === undefined ? {} : { finishAnswer }),
  };
}

function api(family: ServedApi, backendPath: string, read: PassthroughApi['read']): PassthroughApi {
  return { api: family, backendPath, read };
}

export const embeddingsPassthrough = api('embeddings', '/v1/embeddings', (body) => {
  const request = readEmbeddingsRequest(body);
  return relayed(body, request, (answer) => encodeEmbeddingsAnswer(answer, request.encodingFormat));
});

export const completionsPassthrough = api('completions', '/v1/completions', (body) => {
  const request = readCompletionsRequest(body);
  return { ...relayed(body, request), choices: request.prompts * request.n };
});

export const rerankPassthrough = api('rerank', '/v1/rerank', (body) => {
  const request = readRerankRequest(body);
  return relayed(body, request, (answer) => orderRerankAnswer(answer, request));
});

export const scorePassthrough = api('rerank', '/v1/score', (body) => relayed(body, readScoreRequest(body)));
