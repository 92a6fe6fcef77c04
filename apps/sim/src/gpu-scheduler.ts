/**
 * A `max_num_seqs`-style continuous-batching scheduler (vLLM's, reduced to what shapes latency):
 * - requests wait in FIFO order until a batch slot and KV blocks for their prompt are free;
 * - admitted requests prefill one after another at the prefill rate (so TTFT grows with the prompt
 *   and with the prefill work ahead of it), plus a fixed step cost once per busy period; prompt
 *   blocks found in the paged KV cache (kv-cache.ts: blocks held by running sequences, LRU
 *   eviction of the unreferenced ones) are not recomputed;
 * - every running sequence then gets one token per decode step, whose length grows with the
 *   running batch (`decodeStepMs`), re-read at every token, so ITL follows the batch as it changes;
 * - a sequence released (finished, or its client gone) frees its slot and blocks at once, and the
 *   next waiting request is admitted.
 * There is no preemption: a batch whose KV cache fills up keeps decoding (usage is capped at 1).
 *
 * Times are real milliseconds from `performance.now()`; the profile's simulated durations are
 * multiplied by `timeScale` (0.01 = 100× faster, same shapes).
 */
import { performance } from 'node:perf_hooks';
import { decodeStepMs, prefillMs, type GpuProfile } from './gpu-profile.js';
import { PagedKvCache, type KvAllocation, type KvCacheObserver } from './kv-cache.js';

export type SequenceState = 'waiting' | 'running' | 'released';

/** Why a sequence ended, as vLLM's `finished_reason` label names it. */
export type FinishedReason = 'stop' | 'length' | 'abort';

/** One request inside the scheduler. Times are `performance.now()` ms. */
export class Sequence {
  state: SequenceState = 'waiting';
  /** Tokens generated so far (the writer advances it); counts toward KV usage. */
  generatedTokens = 0;
  readonly queuedAt = performance.now();
  admittedAt = 0;
  /** When the first token is due (end of prefill). */
  firstTokenAt = 0;
  /** Prompt tokens served from the prefix cache. */
  cachedTokens = 0;
  /** Its KV-cache blocks while it runs. */
  allocation: KvAllocation | undefined;

  constructor(
    readonly promptTokens: number,
    readonly blockHashes: readonly number[],
    /** The token ids `blockHashes` were made of (for the `BlockStored` events). */
    readonly tokenIds: readonly number[],
    /** Called once on admission with the real ms until the first token. */
    readonly onAdmit: (firstTokenDelayMs: number) => void,
  ) {}
}

/** What the scheduler tells its observer (the metrics) when a sequence ends. */
export interface SequenceEnd {
  sequence: Sequence;
  reason: FinishedReason;
  releasedAt: number;
}

export class GpuScheduler {
  readonly running = new Set<Sequence>();
  private readonly waiting: Sequence[] = [];
  private prefillBusyUntil = 0;
  readonly prefixCache: PagedKvCache;

  constructor(
    readonly profile: Readonly<GpuProfile>,
    readonly timeScale: number,
    private readonly onEnd: (end: SequenceEnd) => void = () => undefined,
    kvObserver?: KvCacheObserver,
  ) {
    if (!(timeScale > 0) || !Number.isFinite(timeScale))
      throw new RangeError(`time-scale must be a number > 0, got ${timeScale}`);
    this.prefixCache = new PagedKvCache(profile.numGpuBlocks, profile.blockSize, kvObserver);
  }

  get waitingCount(): number {
    return this.waiting.length;
  }

  /** Queues a request; its `onAdmit` runs (synchronously when a slot is free) once it is admitted. */
  submit(sequence: Sequence): Sequence {
    this.waiting.push(sequence);
    this.admit();
    return sequence;
  }

  /** Ends a sequence (finished or aborted, waiting or running) and admits what now fits. Idempotent. */
  release(sequence: Sequence, reason: FinishedReason): void {
    if (sequence.state === 'released') return;
    if (sequence.state === 'waiting') {
      const at = this.waiting.indexOf(sequence);
      if (at >= 0) this.waiting.splice(at, 1);
    } else {
      this.running.delete(sequence);
      if (sequence.allocation !== undefined) this.prefixCache.release(sequence.allocation);
    }
    sequence.state = 'released';
    this.onEnd({ sequence, reason, releasedAt: performance.now() });
    this.admit();
  }

  /** The current inter-token latency in real ms: one decode step at the running batch size. */
  itlMs(): number {
    return decodeStepMs(this.profile, this.running.size) * this.timeScale;
  }

  /** KV-cache blocks in use by running sequences (prompt and generated tokens), capped at the total. */
  usedBlocks(): number {
    this.growRunning();
    return this.prefixCache.usedBlocks;
  }

  /** Gives every running sequence the blocks its generated tokens now fill (evicting cached blocks as vLLM would). */
  private growRunning(): void {
    for (const sequence of this.running) {
      if (sequence.allocation !== undefined)
        this.prefixCache.grow(sequence.allocation, sequence.promptTokens, sequence.generatedTokens);
    }
  }

  /** KV-cache usage in [0, 1] (vLLM `kv_cache_usage_perc`, a fraction despite its name). */
  kvCacheUsage(): number {
    return this.usedBlocks() / this.profile.numGpuBlocks;
  }

  private admit(): void {
    this.growRunning();
    while (this.waiting.length > 0 && this.running.size < this.profile.maxNumSeqs) {
      const next = this.waiting[0]!;
      const blocks = this.prefixCache.blocksNeeded(next.blockHashes, next.promptTokens);
      // A prompt that could never fit is admitted alone rather than queued for ever.
      if (this.running.size > 0 && this.prefixCache.usedBlocks + blocks > this.profile.numGpuBlocks) return;
      this.waiting.shift();
      this.start(next);
    }
  }

  private start(sequence: Sequence): void {
    const now = performance.now();
    sequence.state = 'running';
    sequence.admittedAt = now;
    sequence.allocation = this.prefixCache.allocate(sequence.blockHashes, sequence.tokenIds, sequence.promptTokens);
    // vLLM recomputes at least the prompt's last token, to produce the first output token.
    sequence.cachedTokens = Math.min(sequence.allocation.cachedTokens, Math.max(0, sequence.promptTokens - 1));
    // Prefills queue behind each other at the prefill rate; the fixed step cost is paid once per
    // busy period, since prompts that arrive together are prefilled in the same engine steps.
    const uncached = sequence.promptTokens - sequence.cachedTokens;
    const busy = this.prefillBusyUntil > now;
    const costMs = busy
      ? prefillMs(this.profile, uncached) - this.profile.prefillOverheadMs
      : prefillMs(this.profile, uncached);
    this.prefillBusyUntil = (busy ? this.prefillBusyUntil : now) + costMs * this.timeScale;
    sequence.firstTokenAt = this.prefillBusyUntil;
    this.running.add(sequence);
    sequence.onAdmit(this.prefillBusyUntil - now);
  }
}
