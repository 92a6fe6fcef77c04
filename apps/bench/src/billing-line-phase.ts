/**
 * The pool bench's Claude-Code-shaped phase: multi-turn Anthropic Messages conversations whose
 * system prompt opens with Claude Code's billing line (`x-anthropic-billing-header:
 * cc_version=…; cc_entrypoint=cli; cch=…;`, its version suffix set per conversation and `cch` per
 * request, see docs/protocols.md "Claude Code"), followed by a long system prompt every conversation shares. Each turn
 * resends the whole history plus one user turn, as Claude Code does. The figure is the backends'
 * prefix-cache hit rate: the sims' `vllm:prefix_cache_hits_total` / `vllm:prefix_cache_queries_total`
 * (tokens) over the phase, summed over every sim of the pool.
 */
import { randomBytes } from 'node:crypto';
import { Agent } from 'undici';
import { scrapeMetrics, sumOf } from './prometheus.js';
import { sendRequest } from './request.js';

export interface BillingPhaseOptions {
  origin: string;
  apiKey: string;
  model: string;
  /** Origins of the sims behind the pool (their vLLM-style `/metrics`). */
  simOrigins: readonly string[];
  conversations: number;
  turns: number;
  concurrency: number;
}

export interface BillingPhaseResult {
  requests: number;
  errors: number;
  queriesTokens: number;
  hitsTokens: number;
  /** hits / queries, in [0, 1]. */
  hitRate: number;
}

/**
 * About 1,100 words of instructions every conversation shares (a real Claude Code prompt, tools included, is longer).
 */
const SHARED_SYSTEM = Array.from(
  { length: 60 },
  (_, index) =>
    `Rule ${index}: read the files before editing them, keep the change small, run the tests, and report what changed.`,
).join('\n');

function billingLine(conversation: number): string {
  return `x-anthropic-billing-header: cc_version=2.1.332.${((conversation * 2654435761) >>> 0).toString(16).slice(0, 3)}; cc_entrypoint=cli; cch=${randomBytes(3).toString('hex')};`;
}

async function prefixCache(simOrigins: readonly string[]): Promise<{ queries: number; hits: number }> {
  const scrapes = await Promise.all(simOrigins.map((origin) => scrapeMetrics(origin)));
  return {
    queries: scrapes.reduce((sum, samples) => sum + sumOf(samples, 'vllm:prefix_cache_queries_total'), 0),
    hits: scrapes.reduce((sum, samples) => sum + sumOf(samples, 'vllm:prefix_cache_hits_total'), 0),
  };
}

/** Runs `conversations` conversations of `turns` turns each (one conversation per worker at a time). */
export async function billingLinePhase(options: BillingPhaseOptions): Promise<BillingPhaseResult> {
  const dispatcher = new Agent({ connections: options.concurrency * 2 });
  const before = await prefixCache(options.simOrigins);
  let requests = 0;
  let errors = 0;
  let next = 0;
  const worker = async () => {
    for (let conversation = next++; conversation < options.conversations; conversation = next++) {
      const messages: Array<{ role: 'user' | 'assistant'; content: string }> = [];
      for (let turn = 0; turn < options.turns; turn++) {
        messages.push({
          role: 'user',
          content: `Conversation ${conversation}, turn ${turn}: ${'please look at the failing test and fix the handler. '.repeat(8)}`,
        });
        const body = {
          system: [{ type: 'text', text: `${billingLine(conversation)}\n${SHARED_SYSTEM}` }],
          messages,
        };
        const result = await sendRequest(dispatcher, options.origin, {
          dialect: 'messages',
          model: options.model,
          prompt: '',
          maxTokens: 24,
          stream: true,
          apiKey: options.apiKey,
          body,
        });
        requests++;
        if (!result.ok) errors++;
        // A fixed answer keeps the history the same bytes on the next turn, as a client replaying it does.
        messages.push({
          role: 'assistant',
          content: `Turn ${turn} done: the handler now checks its input and the test passes.`,
        });
      }
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, worker));
  await dispatcher.close();
  const after = await prefixCache(options.simOrigins);
  const queriesTokens = after.queries - before.queries;
  const hitsTokens = after.hits - before.hits;
  return { requests, errors, queriesTokens, hitsTokens, hitRate: queriesTokens === 0 ? 0 : hitsTokens / queriesTokens };
}
