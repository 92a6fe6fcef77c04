/** Test helpers: a seeded generator (mulberry32), a plain provider and a manual clock. */
import type { Provider } from '../../../src/pool/provider.js';

export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface TestProvider extends Provider {
  closed: boolean;
}

export function provider(id: string, fields: Partial<Omit<TestProvider, 'available'>> = {}): TestProvider {
  const base = {
    id,
    maxConcurrency: 10,
    inFlight: 0,
    weight: 1,
    labels: {},
    load: { queued: 0 },
    closed: false,
    ...fields,
  };
  return Object.defineProperty(base, 'available', {
    get(this: TestProvider) {
      return !this.closed && this.inFlight < this.maxConcurrency;
    },
    enumerable: true,
  }) as TestProvider;
}

export class ManualClock {
  constructor(public ms = 1_000_000) {}
  readonly now = (): number => this.ms;
  advance(ms: number): void {
    this.ms += ms;
  }
}
