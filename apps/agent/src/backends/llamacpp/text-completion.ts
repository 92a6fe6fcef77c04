/**
 * Generates a legacy text completion on a context sequence (node-llama-cpp `LlamaCompletion`)
 * and encodes it as vLLM and OpenAI do (OpenAI API reference "Completions"; docs/protocols.md
 * "Legacy completions"): a `text_completion` object with one choice per prompt and `n`
 * (index = prompt × n + j), or `text_completion` SSE chunks carrying the text itself in
 * `choices[].text` (no delta, no role), a chunk with each choice's `finish_reason`, with
 * `stream_options.include_usage` a `choices: []` usage chunk (and `usage: null` on the others),
 * then `data: [DONE]`.
 *
 * - `suffix`: fill-in-the-middle through the model's FIM tokens (`generateInfillCompletion`);
 *   the caller refuses it for a model without them (`supportsInfill`).
 * - `echo`: the prompt's text comes first in each choice's text.
 * - finish_reason `length` when `max_tokens` stopped it, else `stop` (end of generation or a
 *   `stop` sequence, which is left out of the text: `stop-scanner.ts`; generation is stopped
 *   there).
 * Usage: the prompts' tokens (each once, whatever `n`) and every token generated.
 */
import { newId, sseJson, SSE_DONE, AsyncQueue } from '@iop/core';
import type { BackendResponse } from '../backend.js';
import type { CompletionParams } from './completion-request.js';
import type { LlamaContextSequence, LlamaModel, NodeLlamaCpp, Token } from './library.js';
import { StopScanner } from './stop-scanner.js';
import { usageOf, withWarnings } from './chat-completion.js';

export interface TextGeneration {
  library: NodeLlamaCpp;
  model: LlamaModel;
  sequence: LlamaContextSequence;
  params: CompletionParams;
  /** Prompt tokens of each prompt (counted by the caller). */
  promptTokens: number[];
  signal: AbortSignal;
  /** Called once generation is over (the sequence can be reused). */
  onDone: () => void;
}

interface Choice {
  index: number;
  text: string;
  finishReason: 'stop' | 'length';
}

interface Outcome {
  choices: Choice[];
  promptTokens: number;
  completionTokens: number;
}

/** Whether the model's tokenizer has the fill-in-the-middle tokens (prefix, suffix, middle). */
export function supportsInfill(model: LlamaModel): boolean {
  const { prefix, suffix, middle } = model.tokens.infill;
  return prefix !== null && suffix !== null && middle !== null;
}

/** A prompt's tokens as the completion evaluates them. */
export function promptTokensOf(model: LlamaModel, prompt: string | Token[]): Token[] {
  return typeof prompt === 'string' ? model.tokenize(prompt) : prompt;
}

export function generateTextCompletion(generation: TextGeneration): BackendResponse {
  return generation.params.stream ? streamResponse(generation) : jsonResponse(generation);
}

function jsonResponse(generation: TextGeneration): BackendResponse {
  const { params } = generation;
  const body = (async function* () {
    const outcome = await generate(generation, () => undefined);
    yield Buffer.from(
      JSON.stringify({
        id: newId('cmpl-'),
        object: 'text_completion',
        created: Math.floor(Date.now() / 1000),
        model: params.model,
        choices: outcome.choices.map((choice) => ({
          index: choice.index,
          text: choice.text,
          logprobs: null,
          finish_reason: choice.finishReason,
        })),
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

function streamResponse(generation: TextGeneration): BackendResponse {
  const { params } = generation;
  const queue = new AsyncQueue<Uint8Array>(Number.POSITIVE_INFINITY);
  const head = {
    id: newId('cmpl-'),
    object: 'text_completion',
    created: Math.floor(Date.now() / 1000),
    model: params.model,
  };
  const usageNull = params.includeUsage ? { usage: null } : {};
  const send = (choices: unknown[], extra: object = usageNull): void => {
    queue.push(Buffer.from(sseJson({ ...head, choices, ...extra })));
  };
  const onText = (index: number, text: string, finishReason: string | null = null) =>
    send([{ index, text, logprobs: null, finish_reason: finishReason }]);
  generate(generation, onText)
    .then((outcome) => {
      if (params.includeUsage) send([], { usage: usageOf(outcome) });
      queue.push(Buffer.from(SSE_DONE));
      queue.close();
    })
    .catch((error: unknown) => {
      if (generation.signal.aborted) {
        queue.fail(generation.signal.reason);
        return;
      }
      const message = error instanceof Error ? error.message : 'generation failed';
      queue.push(Buffer.from(sseJson({ error: { message, type: 'server_error', param: null, code: null } })));
      queue.push(Buffer.from(SSE_DONE));
      queue.close();
    });
  return {
    status: 200,
    headers: withWarnings({ 'content-type': 'text/event-stream', 'cache-control': 'no-cache' }, params.warnings),
    body: queue,
  };
}

/** Generates every choice in turn; `onText(index, text, finish?)` hears each piece and each choice's end. */
async function generate(
  generation: TextGeneration,
  onText: (index: number, text: string, finishReason?: string) => void,
): Promise<Outcome> {
  const { model, params } = generation;
  const choices: Choice[] = [];
  let completionTokens = 0;
  try {
    for (const [promptIndex, prompt] of params.prompts.entries()) {
      const promptText = typeof prompt === 'string' ? prompt : model.detokenize(prompt);
      for (let j = 0; j < params.n; j++) {
        const index = promptIndex * params.n + j;
        let text = params.echo ? promptText : '';
        if (params.echo && promptText !== '') onText(index, promptText);
        let finishReason: Choice['finishReason'] = 'length';
        if (params.maxTokens > 0) {
          const generated = await generateOne(
            generation,
            prompt,
            j,
            (chunk) => onText(index, chunk),
            (tokens) => {
              completionTokens += tokens;
            },
          );
          text += generated.text;
          finishReason = generated.finishReason;
        }
        onText(index, '', finishReason);
        choices.push({ index, text, finishReason });
      }
    }
  } finally {
    generation.onDone();
  }
  return { choices, promptTokens: generation.promptTokens.reduce((sum, count) => sum + count, 0), completionTokens };
}

/**
 * One choice: its text (stop sequences matched on the text, `StopScanner`; generation stopped at
 * the first) and finish reason. `onTokens` hears each batch of generated tokens.
 */
async function generateOne(
  generation: TextGeneration,
  prompt: string | Token[],
  choice: number,
  onChunk: (text: string) => void,
  onTokens: (count: number) => void,
): Promise<{ text: string; finishReason: Choice['finishReason'] }> {
  const { library, sequence, params, signal } = generation;
  const scanner = new StopScanner(params.stop);
  const stop = new AbortController();
  const stopOrAbort = AbortSignal.any([signal, stop.signal]);
  let text = '';
  const release = (chunk: string) => {
    if (chunk === '') return;
    text += chunk;
    onChunk(chunk);
  };
  const completion = new library.LlamaCompletion({ contextSequence: sequence, autoDisposeSequence: false });
  const options = {
    signal: stopOrAbort,
    stopOnAbortSignal: true,
    maxTokens: params.maxTokens,
    ...(params.temperature === undefined ? {} : { temperature: params.temperature }),
    ...(params.topP === undefined ? {} : { topP: params.topP }),
    ...(params.seed === undefined ? {} : { seed: params.seed + choice }),
    onToken: (tokens: Token[]) => onTokens(tokens.length),
    onTextChunk: (chunk: string) => {
      release(scanner.push(chunk));
      if (scanner.stopped !== undefined) stop.abort();
    },
  };
  try {
    const result =
      params.suffix === undefined
        ? await completion.generateCompletionWithMeta(prompt, options)
        : await completion.generateInfillCompletionWithMeta(prompt, params.suffix, options);
    if (signal.aborted) throw signal.reason;
    release(scanner.end());
    return {
      text,
      finishReason: scanner.stopped === undefined && result.metadata.stopReason === 'maxTokens' ? 'length' : 'stop',
    };
  } finally {
    completion.dispose();
  }
}
