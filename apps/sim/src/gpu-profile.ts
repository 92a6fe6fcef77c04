/**
 * GPU timing profiles: the figures a vLLM server on one GPU shows, as a small analytic model.
 * The model and the public figures behind each profile are in apps/sim/README.md
 * ("GPU timing profiles").
 *
 * All durations here are in simulated milliseconds (time-scale 1); the scheduler multiplies them
 * by the time-scale factor.
 */

export interface GpuProfile {
  name: string;
  /** vLLM `--max-num-seqs`: sequences decoded together; more requests wait in the queue. */
  maxNumSeqs: number;
  /** KV-cache block size (tokens), vLLM `--block-size` (16 on CUDA). */
  blockSize: number;
  /** KV-cache blocks on the GPU (vLLM logs `# GPU blocks`); also the prefix-cache capacity. */
  numGpuBlocks: number;
  /** Prompt tokens processed per second by prefill (compute-bound). */
  prefillTokensPerS: number;
  /** Fixed cost of scheduling a prefill (ms): the TTFT of a one-token prompt on an idle GPU. */
  prefillOverheadMs: number;
  /** Decode step time with one running sequence (ms): the ITL at batch 1 (memory-bound). */
  itlBaseMs: number;
  /** Extra decode step time per further running sequence (ms). */
  itlPerSeqMs: number;
  /** Default content tokens of a request without `max_tokens` (the `output-tokens` knob default). */
  outputTokens: number;
  /** Context window (tokens), vLLM `--max-model-len`. */
  maxModelLen: number;
}

/**
 * Llama-3.1-8B-Instruct (BF16) on one H100 SXM 80 GB under vLLM with default settings.
 * Decode at batch 1: 16 GB of weights read per step at 3.35 TB/s is 4.8 ms, ~75 % of that
 * bandwidth is reached in practice → ~6.5 ms. KV cache: 128 KiB per token (32 layers × 8 KV heads
 * × 128 dims × K and V × 2 bytes); 0.9 × 80 GB − 16 GB weights − ~4 GB activations ≈ 52 GB
 * → ~400 k tokens = 25 000 blocks of 16.
 */
export const GPU_H100_8B: Readonly<GpuProfile> = Object.freeze({
  name: 'gpu-h100-8b',
  maxNumSeqs: 256,
  blockSize: 16,
  numGpuBlocks: 25_000,
  prefillTokensPerS: 20_000,
  prefillOverheadMs: 15,
  itlBaseMs: 6.5,
  itlPerSeqMs: 0.09,
  outputTokens: 2_000,
  maxModelLen: 32_768,
});

/**
 * Qwen2.5-7B-Instruct (BF16) on one NVIDIA A10G 24 GB under vLLM with default settings: a small
 * cache, where a pool's working set of long prompts is several times what its GPUs hold and
 * evictions decide hit rates. Weights 7.6 B × 2 bytes ≈ 15.2 GB. KV: 28 layers × 4 KV heads × 128
 * dims × K and V × 2 bytes = 56 KiB per token; 0.9 × 24 GB − 15.2 GB − ~1.5 GB activations ≈ 4.9 GB
 * → ~85 k tokens = 5 300 blocks of 16. Decode at batch 1: 15.2 GB per step at 600 GB/s is 25 ms,
 * ~75 % of that bandwidth in practice → ~34 ms. Prefill: 2 × 7.6 B = 15.2 GFLOP per token; the
 * A10G's ~70 dense BF16 TFLOPS at ~60 % → ~2 800 tokens/s.
 */
export const GPU_A10G_7B: Readonly<GpuProfile> = Object.freeze({
  name: 'gpu-a10g-7b',
  maxNumSeqs: 256,
  blockSize: 16,
  numGpuBlocks: 5_300,
  prefillTokensPerS: 2_800,
  prefillOverheadMs: 25,
  itlBaseMs: 34,
  itlPerSeqMs: 0.35,
  outputTokens: 1_000,
  maxModelLen: 32_768,
});

export const GPU_PROFILES: Readonly<Record<string, Readonly<GpuProfile>>> = Object.freeze({
  [GPU_H100_8B.name]: GPU_H100_8B,
  [GPU_A10G_7B.name]: GPU_A10G_7B,
});

/** Decode step time (simulated ms) with `running` sequences in the batch (at least 1). */
export function decodeStepMs(profile: Readonly<GpuProfile>, running: number): number {
  return profile.itlBaseMs + profile.itlPerSeqMs * Math.max(0, running - 1);
}

/** Prefill time (simulated ms) of `tokens` prompt tokens not found in the prefix cache. */
export function prefillMs(profile: Readonly<GpuProfile>, tokens: number): number {
  return profile.prefillOverheadMs + (Math.max(0, tokens) / profile.prefillTokensPerS) * 1000;
}

/**
 * The profile named `name`, with `overrides` applied.
 * @throws RangeError for an unknown profile name or a bad override.
 */
export function resolveProfile(name: string, overrides: Partial<GpuProfile> = {}): Readonly<GpuProfile> {
  const base = GPU_PROFILES[name];
  if (base === undefined)
    throw new RangeError(`unknown profile '${name}' (known: ${Object.keys(GPU_PROFILES).join(', ')})`);
  const profile = { ...base, ...overrides };
  if (!Number.isSafeInteger(profile.maxNumSeqs) || profile.maxNumSeqs < 1)
    throw new RangeError(`max-num-seqs must be an integer >= 1, got ${profile.maxNumSeqs}`);
  if (!Number.isSafeInteger(profile.numGpuBlocks) || profile.numGpuBlocks < 1)
    throw new RangeError(`num-gpu-blocks must be an integer >= 1, got ${profile.numGpuBlocks}`);
  return Object.freeze(profile);
}
