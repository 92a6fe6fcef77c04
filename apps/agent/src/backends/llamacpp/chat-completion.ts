/**
 * Generates one chat completion on a context sequence and encodes it as an OpenAI-compatible
 * server does: a `chat.completion` JSON object (docs/protocols.md "Chat response") or `chat.completion.chunk` SSE
 * events (docs/protocols.md "Chat stream"): role delta with `content:""` first, content deltas, a last delta `{}` with
 * `finish_reason`, with `stream_options.include_usage` a `choices:[]` usage chunk (and
 * `usage:null` on every other chunk), then `data: [DONE]`.
 *
 * finish_reason: `length` when `max_tokens` stopped generation, otherwise `stop` (end-of-generation
 * token or a `stop` sequence, which is not included in the output). Usage is exact: prompt tokens
 * are the rendered chat prompt through the model's tokenizer, completion tokens the tokens
 * generated.
 */
import { newId, sseJson, SSE_DONE } from '@iop/core';
import { AsyncQueue } from '@iop/core';
import type { BackendResponse } from '../backend.js';
import type { ChatParams } from './chat-request.js';
import type { ChatWrapper, LlamaContextSequence, LlamaGrammar, LlamaModel, NodeLlamaCpp } from './library.js';

export interface ChatGeneration {
  library: NodeLlamaCpp;
  model: LlamaModel;
  chatWrapper: ChatWrapper;
  sequence: LlamaContextSequence;
  grammar: LlamaGrammar | undefined;
  params: ChatParams;
  /** Prompt tokens of `params.history` as rendered, when already counted. */
  promptTokens?: number;
  signal: AbortSignal;
  /** Called once generation is over (the sequence can be reused). */
  onDone: () => void;
}

interface Outcome {
  text: string;
  finishReason: 'stop' | 'length';
  promptTokens: number;
  completionTokens: number;
}

/** Prompt tokens of a chat history as the chat wrapper renders it. */
export function countPromptTokens(
  model: LlamaModel,
  chatWrapper: ChatWrapper,
  history: ChatParams['history'],
): number[] {
  const { contextText } = chatWrapper.generateContextState({ chatHistory: history });
  return contextText.tokenize(model.tokenizer);
}

export function generateChatCompletion(generation: ChatGeneration): BackendResponse {
  return generation.params.stream ? streamResponse(generation) : jsonResponse(generation);
}

function jsonResponse(generation: ChatGeneration): BackendResponse {
  const { params } = generation;
  const body = (async function* () {
    const outcome = await generate(generation, () => undefined);
    yield Buffer.from(
      JSON.stringify({
        id: newId('chatcmpl-'),
        object: 'chat.completion',
        created: Math.floor(Date.now() / 1000),
        model: params.model,
        choices: [
          {
            index: 0,
            message: { role: 'assistant', content: outcome.text, refusal: null },
            logprobs: null,
            finish_reason: outcome.finishReason,
          },
        ],
        usage: usageOf(outcome),
      }),
    );
  })();
  return {
    status: 200,
    headers: withWarnings({ 'content-type': 'application/json; charset=utf-8' }, params.warnings),
    body,
  };
}

function streamResponse(generation: ChatGeneration): BackendResponse {
  const { params } = generation;
  const queue = new AsyncQueue<Uint8Array>(Number.POSITIVE_INFINITY);
  const head = {
    id: newId('chatcmpl-'),
    object: 'chat.completion.chunk',
    created: Math.floor(Date.now() / 1000),
    model: params.model,
  };
  const usageNull = params.includeUsage ? { usage: null } : {};
  const send = (choices: unknown[], extra: object = usageNull): void => {
    queue.push(Buffer.from(sseJson({ ...head, choices, ...extra })));
  };
  send([{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }]);
  generate(generation, (text) => send([{ index: 0, delta: { content: text }, logprobs: null, finish_reason: null }]))
    .then((outcome) => {
      send([{ index: 0, delta: {}, logprobs: null, finish_reason: outcome.finishReason }]);
      if (params.includeUsage) send([], { usage: usageOf(outcome) });
      queue.push(Buffer.from(SSE_DONE));
      queue.close();
    })
    .catch((error: unknown) => {
      if (generation.signal.aborted) {
        queue.fail(generation.signal.reason);
        return;
      }
      queue.push(
        Buffer.from(
          sseJson({
            error: {
              message: error instanceof Error ? error.message : 'generation failed',
              type: 'server_error',
              param: null,
              code: null,
            },
          }),
        ),
      );
      queue.push(Buffer.from(SSE_DONE));
      queue.close();
    });
  return {
    status: 200,
    headers: withWarnings({ 'content-type': 'text/event-stream', 'cache-control': 'no-cache' }, params.warnings),
    body: queue,
  };
}

/** Adds `x-iop-warnings` (what the request asked for that this backend cannot do); the edge passes it on. */
/** `headers` with `x-iop-warnings` when there are warnings (chat and text completions alike). */
export function withWarnings(headers: Record<string, string>, warnings: readonly string[]): Record<string, string> {
  return warnings.length === 0 ? headers : { ...headers, 'x-iop-warnings': warnings.join('; ') };
}

async function generate(generation: ChatGeneration, onText: (text: string) => void): Promise<Outcome> {
  const { library, model, chatWrapper, sequence, grammar, params, signal } = generation;
  const promptTokens = generation.promptTokens ?? countPromptTokens(model, chatWrapper, params.history).length;
  const chat = new library.LlamaChat({ contextSequence: sequence, chatWrapper, autoDisposeSequence: false });
  let completionTokens = 0;
  try {
    const response = await chat.generateResponse(params.history, {
      signal,
      ...(params.maxTokens === undefined ? {} : { maxTokens: params.maxTokens }),
      ...(params.temperature === undefined ? {} : { temperature: params.temperature }),
      ...(params.topP === undefined ? {} : { topP: params.topP }),
      ...(params.seed === undefined ? {} : { seed: params.seed }),
      ...(params.stop.length === 0 ? {} : { customStopTriggers: params.stop }),
      ...(grammar === undefined ? {} : { grammar }),
      onToken: (tokens) => {
        completionTokens += tokens.length;
      },
      onTextChunk: (text) => {
        if (text !== '') onText(text);
      },
    });
    if (signal.aborted) throw signal.reason;
    return {
      text: response.response,
      finishReason: response.metadata.stopReason === 'maxTokens' ? 'length' : 'stop',
      promptTokens,
      completionTokens,
    };
  } finally {
    chat.dispose();
    generation.onDone();
  }
}

/** OpenAI's `usage` of a generation (chat and text completions alike). */
export function usageOf(outcome: Pick<Outcome, 'promptTokens' | 'completionTokens'>): object {
  return {
    prompt_tokens: outcome.promptTokens,
    completion_tokens: outcome.completionTokens,
    total_tokens: outcome.promptTokens + outcome.completionTokens,
  };
}
