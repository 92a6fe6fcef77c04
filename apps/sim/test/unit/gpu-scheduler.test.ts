import {
  blockHashes,
  decodeStepMs,
  GPU_H100_8B,
  GpuScheduler,
  prefillMs,
  resolveProfile,
  Sequence,
  type SequenceEnd,
} from '../../src/index.js';

function sequence(promptTokens: number, admitted: number[] = [], hashes: readonly number[] = []): Sequence {
  return new Sequence(promptTokens, hashes, [], (delayMs) => admitted.push(delayMs));
}

describe('gpu-h100-8b timing model', () => {
  it('gives the ITL of one decode step as a function of the running batch', () => {
    expect(decodeStepMs(GPU_H100_8B, 1)).toBeCloseTo(6.5, 6);
    expect(decodeStepMs(GPU_H100_8B, 64)).toBeCloseTo(6.5 + 0.09 * 63, 6); // 12.17 ms
    expect(decodeStepMs(GPU_H100_8B, 256)).toBeCloseTo(6.5 + 0.09 * 255, 6); // 29.45 ms
    expect(decodeStepMs(GPU_H100_8B, 0)).toBeCloseTo(6.5, 6);
  });

  it('gives a prefill time linear in the uncached prompt tokens', () => {
    expect(prefillMs(GPU_H100_8B, 0)).toBe(15);
    expect(prefillMs(GPU_H100_8B, 2_000)).toBeCloseTo(15 + 100, 6); // 20 000 tokens/s
    expect(prefillMs(GPU_H100_8B, 32_000)).toBeCloseTo(15 + 1_600, 6);
  });

  it('rejects an unknown profile and a bad max-num-seqs', () => {
    expect(() => resolveProfile('gpu-a100-70b')).toThrow(
      "unknown profile 'gpu-a100-70b' (known: gpu-h100-8b, gpu-a10g-7b)",
    );
    expect(() => resolveProfile('gpu-h100-8b', { maxNumSeqs: 0 })).toThrow(
      'max-num-seqs must be an integer >= 1, got 0',
    );
    expect(resolveProfile('gpu-h100-8b', { maxNumSeqs: 8 }).maxNumSeqs).toBe(8);
  });
});

describe('GpuScheduler', () => {
  it('scales the ITL with the running batch and the time scale', () => {
    const scheduler = new GpuScheduler(GPU_H100_8B, 0.01);
    const first = scheduler.submit(sequence(10));
    expect(scheduler.itlMs()).toBeCloseTo(0.065, 9);
    const batch = Array.from({ length: 63 }, () => scheduler.submit(sequence(10)));
    expect(scheduler.running.size).toBe(64);
    expect(scheduler.itlMs()).toBeCloseTo(0.1217, 9);
    for (const entry of [first, ...batch]) scheduler.release(entry, 'stop');
    expect(scheduler.running.size).toBe(0);
  });

  it('queues beyond max_num_seqs in FIFO order and admits the next one when a slot frees', () => {
    const ends: SequenceEnd[] = [];
    const scheduler = new GpuScheduler(resolveProfile('gpu-h100-8b', { maxNumSeqs: 2 }), 1, (end) => ends.push(end));
    const admitted: number[][] = [[], [], [], []];
    const sequences = admitted.map((log) => scheduler.submit(sequence(100, log)));
    expect(scheduler.running.size).toBe(2);
    expect(scheduler.waitingCount).toBe(2);
    expect(sequences.map((entry) => entry.state)).toEqual(['running', 'running', 'waiting', 'waiting']);
    expect(admitted.map((log) => log.length)).toEqual([1, 1, 0, 0]);

    scheduler.release(sequences[3]!, 'abort'); // a waiting client leaves: dropped from the queue
    expect(scheduler.waitingCount).toBe(1);
    scheduler.release(sequences[0]!, 'stop');
    expect(sequences[2]!.state).toBe('running');
    expect(admitted[2]).toHaveLength(1);
    expect(scheduler.running.size).toBe(2);
    expect(scheduler.waitingCount).toBe(0);
    expect(ends.map((end) => end.reason)).toEqual(['abort', 'stop']);
    scheduler.release(sequences[0]!, 'stop'); // idempotent
    expect(ends).toHaveLength(2);
  });

  it('serializes prefills, so TTFT grows with the prompt and with the prefills ahead', () => {
    const scheduler = new GpuScheduler(GPU_H100_8B, 1);
    const delays: number[] = [];
    scheduler.submit(sequence(4_000, delays)); // 15 + 200 ms
    scheduler.submit(sequence(1_000, delays)); // prefilled after the first, in the same busy period: 215 + 50 ms
    expect(delays[0]).toBeCloseTo(215, 0);
    expect(delays[1]).toBeGreaterThan(264);
    expect(delays[1]).toBeLessThan(266);
  });

  it('serves repeated prompt prefixes from the prefix cache and counts queries and hits in tokens', () => {
    const scheduler = new GpuScheduler(GPU_H100_8B, 1);
    const ids = Array.from({ length: 4_000 }, (_, i) => i % 997);
    const hashes = blockHashes(ids, 16);
    expect(hashes).toHaveLength(250);
    const first = scheduler.submit(sequence(4_000, [], hashes));
    scheduler.release(first, 'stop');
    const delays: number[] = [];
    const second = scheduler.submit(sequence(4_000, delays, hashes));
    expect(second.cachedTokens).toBe(3_999); // the last token is always computed
    expect(scheduler.prefixCache.queriesTokens).toBe(8_000);
    expect(scheduler.prefixCache.hitsTokens).toBe(4_000);
    // Only the uncached token is prefilled, after the first prompt's 215 ms prefill.
    expect(delays[0]!).toBeLessThan(215 + 1);
    expect(delays[0]!).toBeGreaterThan(214);
  });

  it('admits no request whose prompt blocks do not fit in the free KV cache', () => {
    const scheduler = new GpuScheduler(resolveProfile('gpu-h100-8b', { numGpuBlocks: 10 }), 1);
    const big = scheduler.submit(sequence(128)); // 8 blocks
    const next = scheduler.submit(sequence(64)); // 4 blocks: 12 > 10
    expect(scheduler.kvCacheUsage()).toBeCloseTo(0.8, 6);
    expect(next.state).toBe('waiting');
    big.generatedTokens = 16;
    expect(scheduler.kvCacheUsage()).toBeCloseTo(0.9, 6);
    scheduler.release(big, 'length');
    expect(next.state).toBe('running');
    expect(scheduler.kvCacheUsage()).toBeCloseTo(0.4, 6);
  });
});
