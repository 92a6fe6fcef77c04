/**
 * The cost of the edge's cache-aware pick (docs/decisions/007-cache-aware-routing.md "Costs and
 * bounds"): 16 agents × 10 000 resident prefix keys each in the edge's residency index, requests
 * of 32 prefix keys of which a few are resident somewhere, `pickResident` (the expected-cost pick, with
 * a `PrefillLedger` holding every agent's queued prefill) timed per call.
 * Prints p50/p99/max in µs and the index's heap per entry. Runs the compiled edge
 * (`npm run build` first): `node apps/bench/dist/residency-pick-bench.js [--agents 16] [--keys 10000]`.
 * Run with `--expose-gc` for the heap figure.
 */
import path from 'node:path';
import { repoRoot } from './processes.js';

interface Candidate {
  id: string;
  sessionId: string;
  maxConcurrency: number;
  inFlight: number;
  weight: number;
  labels: Record<string, string>;
  load: { queued: number };
  available: boolean;
}

interface Index {
  apply(holder: string, report: { reset: boolean; prefixes: Array<{ key: bigint; cachedTokens: number }> }): unknown;
}

// The edge's compiled modules (the bench does not build against another app's sources).
const edgeDist = path.join(repoRoot(__dirname), 'apps/edge/dist/pool');
/* eslint-disable @typescript-eslint/no-require-imports */
const { ResidencyIndex } = require(path.join(edgeDist, 'residency-index.js')) as {
  ResidencyIndex: new (options?: { maxKeysPerHolder?: number }) => Index;
};
interface Keys {
  keys: number[];
  messages: number[];
  chars: number[];
  total: number;
  leadingSystem: boolean;
}
interface Context {
  loadFactor: number;
  prefillTokensPerS: number;
  tokensPerChar: number;
  backlogMs: (provider: Candidate) => number;
}
const { pickResident } = require(path.join(edgeDist, 'resident-pick.js')) as {
  pickResident: (
    keys: Keys,
    candidates: Candidate[],
    index: Index,
    context: Context,
  ) => { cachedTokens: number } | undefined;
};
const { PrefillLedger } = require(path.join(edgeDist, 'prefill-ledger.js')) as {
  PrefillLedger: new (now: () => number) => {
    backlogMs(id: string, now?: number): number;
    charge(id: string, ms: number, now?: number): void;
  };
};
/* eslint-enable @typescript-eslint/no-require-imports */

function flag(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  return at < 0 ? fallback : Number(process.argv[at + 1]);
}

/** A deterministic 53-bit key stream (splitmix-like over two lanes). */
function keyOf(n: number): number {
  let low = Math.imul(n ^ 0x9e3779b9, 0x85ebca6b) >>> 0;
  let high = Math.imul((n >>> 7) ^ 0xc2b2ae35, 0x27d4eb2f) >>> 0;
  low ^= low >>> 13;
  high ^= high >>> 15;
  return (high & 0x1fffff) * 0x100000000 + low;
}

function main(): void {
  const agents = flag('agents', 16);
  const keysPerAgent = flag('keys', 10_000);
  const picks = flag('picks', 50_000);
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  const heapBefore = process.memoryUsage().heapUsed;
  const index = new ResidencyIndex({ maxKeysPerHolder: keysPerAgent });
  const candidates: Candidate[] = [];
  for (let a = 0; a < agents; a++) {
    const sessionId = `ses_${a}`;
    candidates.push({
      id: `agent-${a}`,
      sessionId,
      maxConcurrency: 16,
      inFlight: a % 4,
      weight: 1,
      labels: {},
      load: { queued: 0 },
      available: true,
    });
    for (let from = 0; from < keysPerAgent; from += 1_000) {
      const prefixes = [];
      for (let k = from; k < Math.min(keysPerAgent, from + 1_000); k++)
        prefixes.push({ key: BigInt(keyOf(a * keysPerAgent + k)), cachedTokens: 16 * (1 + (k % 2_000)) });
      index.apply(sessionId, { reset: false, prefixes });
    }
  }
  gc?.();
  const heapAfter = process.memoryUsage().heapUsed;
  // Requests: 32 keys, the shortest ones resident on a few agents (a shared system prompt and a session's history), the
  // rest cold.
  const requests = Array.from({ length: 1_000 }, (_, r) => {
    const keys: number[] = [];
    for (let i = 0; i < 32; i++)
      keys.push(
        i < 3 ? keyOf(((r + i) % agents) * keysPerAgent + ((r * 7 + i) % keysPerAgent)) : keyOf(1e9 + r * 32 + i),
      );
    return {
      keys,
      messages: keys.map((_, i) => i + 1),
      chars: keys.map((_, i) => 4_000 * (i + 1)),
      total: 32,
      leadingSystem: true,
    };
  });
  const ledger = new PrefillLedger(() => performance.now());
  // One clock read per pick, as the router does.
  let now = performance.now();
  // Queued prefill of 60–60.4 s per agent: it stays queued (and varied) for the whole timed run.
  candidates.forEach((candidate, a) => ledger.charge(candidate.id, 60_000 + (a % 5) * 100));
  const context: Context = {
    loadFactor: 1.25,
    prefillTokensPerS: 10_000,
    tokensPerChar: 0.25,
    backlogMs: (provider) => ledger.backlogMs(provider.id, now),
  };
  const samples = new Float64Array(picks);
  let chosen = 0;
  for (let i = 0; i < picks; i++) {
    const started = process.hrtime.bigint();
    now = performance.now();
    if ((pickResident(requests[i % requests.length]!, candidates, index, context)?.cachedTokens ?? 0) > 0) chosen++;
    samples[i] = Number(process.hrtime.bigint() - started) / 1_000;
  }
  // The first fifth is warm-up (JIT); the figures are over the rest.
  const measured = samples.slice(Math.floor(picks / 5)).sort();
  const at = (q: number) => measured[Math.min(measured.length - 1, Math.floor(q * measured.length))]!;
  const entries = agents * keysPerAgent;
  console.log(
    JSON.stringify({
      agents,
      keysPerAgent,
      picks: measured.length,
      resolved: chosen / picks,
      p50Us: Number(at(0.5).toFixed(2)),
      p99Us: Number(at(0.99).toFixed(2)),
      maxUs: Number(measured[measured.length - 1]!.toFixed(2)),
      ...(gc === undefined ? {} : { bytesPerEntry: Math.round((heapAfter - heapBefore) / entries) }),
    }),
  );
}

main();
