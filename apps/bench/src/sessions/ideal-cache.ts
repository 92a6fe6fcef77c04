/**
 * The ideal prefix-cache hit rate of a run: each request served from cache as far as its prompt
 * matches, block for block, anything any request sent before it (an unbounded cache that every
 * GPU shares). No routing can beat it; the gap to it is what routing and evictions cost.
 * Prompts are tokenized and cut into 16-token blocks as the simulator does (its tokenizer and
 * chained block hashes, apps/sim), so on the sim the figure compares with its measured hits.
 */
import { blockHashes, promptTokenIds } from '@iop/sim';
import type { SessionSample } from './session-runner.js';

const BLOCK_SIZE = 16;

export interface IdealCache {
  /** Prompt tokens of every request. */
  queriedTokens: number;
  /** Of them, the ones an ideal cache would have served. */
  hitTokens: number;
}

/** The ideal hits of `samples` in the order they were sent. */
export function idealCache(samples: readonly SessionSample[]): IdealCache {
  const seen = new Set<number>();
  let queriedTokens = 0;
  let hitTokens = 0;
  for (const sample of [...samples].sort((a, b) => a.sentAtMs - b.sentAtMs)) {
    const ids = promptTokenIds(sample.messages);
    const hashes = blockHashes(ids, BLOCK_SIZE);
    let matched = 0;
    while (matched < hashes.length && seen.has(hashes[matched]!)) matched++;
    queriedTokens += ids.length;
    // The last prompt token is always computed (it produces the first output token).
    hitTokens += Math.min(matched * BLOCK_SIZE, Math.max(0, ids.length - 1));
    for (const hash of hashes) seen.add(hash);
  }
  return { queriedTokens, hitTokens };
}
