/**
 * The embedded backend: a GGUF model run in-process by node-llama-cpp (llama.cpp), served as an
 * OpenAI-compatible server would: `POST /v1/chat/completions` (stream and non-stream),
 * `POST /v1/completions` (legacy text completions, stream and non-stream; `suffix` only for a
 * model with fill-in-the-middle tokens, else a 400), `POST /v1/embeddings` (the model's pooled
 * embeddings, from an embedding context made at the first request), `GET /v1/models`,
 * `POST /tokenize` (`{model, prompt}` or `{model, messages}` → `{count, tokens, max_model_len}`,
 * as vLLM answers).
 *
 * Concurrency: one context with `sequences` sequences; a request waits for a free sequence
 * (reported as `waiting` in heartbeats). Threads default to the cores less one (at least 1): on a
 * 2-core machine the library's default of 4 threads is about a thousand times slower. Only the
 * prebuilt llama.cpp binaries are used (`build: "never"`): nothing is downloaded or compiled.
 */
import { availableParallelism } from 'node:os';
import { basename } from 'node:path';
import { IopError, toIopError } from '@iop/core';
import type { Backend, BackendMetrics, BackendRequest, BackendResponse, ModelInfo } from '../backend.js';
import { countPromptTokens, generateChatCompletion } from './chat-completion.js';
import { historyOf, parseChatRequest, parseJsonObject, type ResponseFormat } from './chat-request.js';
import {
  loadNodeLlamaCpp,
  type ChatWrapper,
  type Llama,
  type LlamaContext,
  type LlamaContextSequence,
  type LlamaGrammar,
  type LlamaModel,
  type NodeLlamaCpp,
} from './library.js';
import { resolveModelPath, type ModelFileOptions } from './model-file.js';
import { createEmbeddings, parseEmbeddingsRequest } from './embeddings.js';
import { parseCompletionRequest } from './completion-request.js';
import { generateTextCompletion, promptTokensOf, supportsInfill } from './text-completion.js';
import type { LlamaEmbeddingContext } from './library.js';

export interface LlamaCppBackendOptions {
  /** GGUF path or `hf:` URI; default stories260K.gguf (see model-file.ts). */
  model?: string;
  /** Where the default model is searched and downloads are kept (model-file.ts). */
  files?: ModelFileOptions;
  /** Model id served; default the file name without `.gguf`. */
  modelId?: string;
  /** CPU threads; default cores - 1, at least 1, at most 32. */
  threads?: number;
  /** `auto` (CUDA/Vulkan/Metal when present) or `none` (CPU), or a named GPU type. Default `auto`. */
  gpu?: 'auto' | 'none' | 'cuda' | 'vulkan' | 'metal';
  /** Context size per sequence, tokens; default the model's training context, at most 8192. */
  contextSize?: number;
  /** Sequences (runs generated at once). Default 4. */
  sequences?: number;
  /** Loads node-llama-cpp; default dynamic `import()`. */
  loadLibrary?: () => Promise<NodeLlamaCpp>;
}

export function defaultThreads(): number {
  return Math.max(1, Math.min(32, availableParallelism() - 1));
}

export class LlamaCppBackend implements Backend {
  readonly kind = 'llamacpp' as const;
  readonly capabilities = ['tokenize'];
  private readonly waiters: { resolve: (sequence: LlamaContextSequence) => void }[] = [];
  /** The embedding context, made at the first embeddings request; requests take turns on it. */
  private embedding: Promise<LlamaEmbeddingContext> | undefined;
  private embeddingTurn: Promise<unknown> = Promise.resolve();

  private constructor(
    private readonly library: NodeLlamaCpp,
    private readonly llama: Llama,
    private readonly model: LlamaModel,
    private readonly context: LlamaContext,
    private readonly chatWrapper: ChatWrapper,
    readonly modelId: string,
    readonly contextSize: number,
    private readonly loaded: { modelFile: string; threads: number; gpu: string | false },
  ) {}

  /** Loads the model and creates its context. Throws when the model cannot be found or loaded. */
  static async create(options: LlamaCppBackendOptions = {}): Promise<LlamaCppBackend> {
    const library = await (options.loadLibrary ?? loadNodeLlamaCpp)();
    const path = await resolveModelPath(library, options.model, options.files);
    const gpu =
      options.gpu === undefined || options.gpu === 'auto' ? 'auto' : options.gpu === 'none' ? false : options.gpu;
    const llama = await library.getLlama({
      gpu,
      build: 'never',
      logLevel: library.LlamaLogLevel.error,
      progressLogs: false,
    });
    const model = await llama.loadModel({ modelPath: path });
    const contextSize = Math.min(options.contextSize ?? Math.min(model.trainContextSize, 8192), model.trainContextSize);
    const context = await model.createContext({
      sequences: options.sequences ?? 4,
      contextSize,
      threads: options.threads ?? defaultThreads(),
    });
    const chatWrapper = library.resolveChatWrapper(model);
    const loaded = { modelFile: path, threads: options.threads ?? defaultThreads(), gpu: llama.gpu };
    return new LlamaCppBackend(
      library,
      llama,
      model,
      context,
      chatWrapper,
      options.modelId ?? basename(path).replace(/\.gguf$/i, ''),
      contextSize,
      loaded,
    );
  }

  /**
   * What was loaded, for the agent's start-up line: model file, CPU threads, GPU (`false` = CPU only), model id,
   * context size.
   */
  describe(): { modelFile: string; threads: number; gpu: string | false; model: string; contextSize: number } {
    return { ...this.loaded, model: this.modelId, contextSize: this.contextSize };
  }

  models(): Promise<ModelInfo[]> {
    return Promise.resolve([
      { id: this.modelId, contextLength: this.contextSize, apis: ['chat', 'completions', 'embeddings'] },
    ]);
  }

  metrics(): Promise<BackendMetrics> {
    return Promise.resolve({ waiting: this.waiters.length });
  }

  async handle(request: BackendRequest): Promise<BackendResponse> {
    try {
      const route = `${request.method.toUpperCase()} ${request.path.split('?')[0]}`;
      switch (route) {
        case 'POST /v1/chat/completions':
          return await this.chatCompletions(request);
        case 'POST /v1/completions':
          return await this.textCompletions(request);
        case 'POST /v1/embeddings':
          return await this.embeddings(request);
        case 'GET /v1/models':
          return jsonBody(200, {
            object: 'list',
            data: [{ id: this.modelId, object: 'model', owned_by: 'iop', max_model_len: this.contextSize }],
          });
        case 'POST /tokenize':
          return this.tokenize(request);
        default:
          throw new IopError('not_found', `no route ${route}`);
      }
    } catch (error) {
      if (request.signal.aborted) throw request.signal.reason;
      const iopError = toIopError(error);
      return jsonBody(iopError.status, {
        error: {
          message: iopError.message,
          type: iopError.status < 500 ? 'invalid_request_error' : 'server_error',
          param: iopError.param ?? null,
          code: null,
        },
      });
    }
  }

  async close(): Promise<void> {
    if (this.embedding !== undefined) await (await this.embedding.catch(() => undefined))?.dispose();
    await this.context.dispose();
    await this.model.dispose();
    await this.llama.dispose();
  }

  private async chatCompletions(request: BackendRequest): Promise<BackendResponse> {
    const params = parseChatRequest(request.body);
    const promptTokens = countPromptTokens(this.model, this.chatWrapper, params.history).length;
    if (promptTokens >= this.contextSize) {
      // The same answer vLLM gives, so the edge reports `context_length_exceeded` (and may fall back to a
      // larger-context group).
      return jsonBody(400, {
        error: {
          message: `This model's maximum context length is ${this.contextSize} tokens. However, your request has ${promptTokens} input tokens. Please reduce the length of the input messages.`,
          type: 'BadRequestError',
          param: 'messages',
          code: 400,
        },
      });
    }
    // Like vLLM: without max_tokens, or with more than fits, the output stops where the context
    // ends (node-llama-cpp would otherwise shift the context and generate without end).
    const room = this.contextSize - promptTokens;
    if (params.maxTokens === undefined || params.maxTokens > room) params.maxTokens = room;
    const grammar = await this.grammarFor(params.responseFormat);
    const sequence = await this.acquireSequence(request.signal);
    return generateChatCompletion({
      promptTokens,
      library: this.library,
      model: this.model,
      chatWrapper: this.chatWrapper,
      sequence,
      grammar,
      params,
      signal: request.signal,
      onDone: () => this.releaseSequence(sequence),
    });
  }

  private async textCompletions(request: BackendRequest): Promise<BackendResponse> {
    const params = parseCompletionRequest(request.body);
    if (params.suffix !== undefined && !supportsInfill(this.model)) {
      throw new IopError(
        'invalid_request',
        `suffix (fill-in-the-middle) needs a model whose tokenizer has FIM prefix, suffix and middle tokens; ${this.modelId} has none`,
        { param: 'suffix' },
      );
    }
    const suffixTokens = params.suffix === undefined ? 0 : this.model.tokenize(params.suffix).length;
    const promptTokens = params.prompts.map((prompt) => promptTokensOf(this.model, prompt).length + suffixTokens);
    const longest = Math.max(...promptTokens);
    if (longest >= this.contextSize) {
      return jsonBody(400, {
        error: {
          message: `This model's maximum context length is ${this.contextSize} tokens. However, your request has ${longest} input tokens. Please reduce the length of the prompt.`,
          type: 'BadRequestError',
          param: 'prompt',
          code: 400,
        },
      });
    }
    // Like vLLM: no more output than fits the context after the longest prompt.
    params.maxTokens = Math.min(params.maxTokens, this.contextSize - longest);
    const sequence = await this.acquireSequence(request.signal);
    return generateTextCompletion({
      library: this.library,
      model: this.model,
      sequence,
      params,
      promptTokens,
      signal: request.signal,
      onDone: () => this.releaseSequence(sequence),
    });
  }

  private async embeddings(request: BackendRequest): Promise<BackendResponse> {
    const params = parseEmbeddingsRequest(request.body);
    this.embedding ??= this.model
      .createEmbeddingContext({ contextSize: this.contextSize, threads: this.loaded.threads })
      .catch((error: unknown) => {
        this.embedding = undefined; // the next request tries again
        throw error;
      });
    const context = await this.embedding;
    // One request at a time on the one embedding context.
    const turn = this.embeddingTurn.then(() => createEmbeddings(context, params, this.contextSize, request.signal));
    this.embeddingTurn = turn.catch(() => undefined);
    return turn;
  }

  private tokenize(request: BackendRequest): BackendResponse {
    const body = parseJsonObject(request.body);
    let tokens: readonly number[];
    if (typeof body.prompt === 'string') {
      tokens = this.model.tokenize(body.prompt);
    } else if (Array.isArray(body.messages)) {
      tokens = countPromptTokens(this.model, this.chatWrapper, historyOf(body.messages as unknown[]));
    } else {
      throw new IopError('invalid_request', 'prompt (a string) or messages (an array) is required', {
        param: 'prompt',
      });
    }
    return jsonBody(200, { count: tokens.length, max_model_len: this.contextSize, tokens });
  }

  private async grammarFor(format: ResponseFormat): Promise<LlamaGrammar | undefined> {
    try {
      if (format.type === 'json_object') return await this.llama.getGrammarFor('json');
      if (format.type === 'json_schema') return await this.llama.createGrammarForJsonSchema(format.schema as never);
      return undefined;
    } catch (error) {
      throw new IopError(
        'invalid_request',
        `response_format: ${error instanceof Error ? error.message : 'unsupported schema'}`,
        {
          param: 'response_format',
          cause: error,
        },
      );
    }
  }

  private acquireSequence(signal: AbortSignal): Promise<LlamaContextSequence> {
    if (this.context.sequencesLeft > 0 && this.waiters.length === 0) return Promise.resolve(this.context.getSequence());
    return new Promise((resolve, reject) => {
      const waiter = { resolve };
      this.waiters.push(waiter);
      signal.addEventListener(
        'abort',
        () => {
          const index = this.waiters.indexOf(waiter);
          if (index >= 0) this.waiters.splice(index, 1);
          reject(signal.reason);
        },
        { once: true },
      );
    });
  }

  private releaseSequence(sequence: LlamaContextSequence): void {
    sequence.dispose();
    const next = this.waiters.shift();
    if (next !== undefined) next.resolve(this.context.getSequence());
  }
}

function jsonBody(status: number, value: unknown): BackendResponse {
  const bytes = Buffer.from(JSON.stringify(value));
  return {
    status,
    headers: { 'content-type': 'application/json; charset=utf-8', 'content-length': String(bytes.length) },
    body: (async function* () {
      yield bytes;
    })(),
  };
}
