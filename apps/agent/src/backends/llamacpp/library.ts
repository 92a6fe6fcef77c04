/**
 * node-llama-cpp is ESM-only (with top-level await), so this CommonJS package loads it with a
 * dynamic `import()` (kept as is by tsc under `module: nodenext`). Types come through a
 * type-only import in `import` resolution mode.
 */
import type * as NodeLlamaCppModule from 'node-llama-cpp' with { 'resolution-mode': 'import' };

export type NodeLlamaCpp = typeof NodeLlamaCppModule;
export type Llama = NodeLlamaCppModule.Llama;
export type LlamaModel = NodeLlamaCppModule.LlamaModel;
export type LlamaContext = NodeLlamaCppModule.LlamaContext;
export type LlamaContextSequence = NodeLlamaCppModule.LlamaContextSequence;
export type LlamaGrammar = NodeLlamaCppModule.LlamaGrammar;
export type ChatHistoryItem = NodeLlamaCppModule.ChatHistoryItem;
export type ChatWrapper = NodeLlamaCppModule.ChatWrapper;
export type Token = NodeLlamaCppModule.Token;
export type LlamaEmbeddingContext = NodeLlamaCppModule.LlamaEmbeddingContext;
export type LlamaCompletion = NodeLlamaCppModule.LlamaCompletion;

/** Loads node-llama-cpp. */
export function loadNodeLlamaCpp(): Promise<NodeLlamaCpp> {
  return import('node-llama-cpp');
}
