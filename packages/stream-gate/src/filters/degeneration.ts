/**
 * Degeneration guard (name `degeneration`): ends the attempt when the output falls into a loop —
 * a unit of 1..`maxPeriodTokens` tokens repeated back to back until the repeating run spans at
 * least `minRepeatedTokens` tokens and `minRepeats` repetitions. Tokens are whitespace-separated
 * words cut into pieces of at most 32 characters (so a loop without spaces is caught too); text,
 * reasoning and tool-call arguments are watched. Cost: O(maxPeriodTokens) per token, memory O(maxPeriodTokens).
 * A loop is retried exactly (sampling differs) but never continued after commit.
 */
import type { StreamEvent } from '@iop/core';
import type { EventValidator, ValidatorFilter, Verdict } from '../filter.js';
import { reject } from '../filter.js';

export interface DegenerationOptions {
  /** Longest repeating unit looked for, in tokens. Default 64. */
  maxPeriodTokens?: number;
  /** Repetitions of the unit needed. Default 8. */
  minRepeats?: number;
  /** Tokens the repeating run must span. Default 256 (a long table of zeros still passes at 255). */
  minRepeatedTokens?: number;
}

const MAX_TOKEN_CHARS = 32;

export function degenerationGuard(options: DegenerationOptions = {}): ValidatorFilter {
  const maxPeriod = options.maxPeriodTokens ?? 64;
  const minRepeats = options.minRepeats ?? 8;
  const minRepeatedTokens = options.minRepeatedTokens ?? 256;
  for (const [name, value] of Object.entries({ maxPeriod, minRepeats, minRepeatedTokens })) {
    if (!Number.isInteger(value) || value < 1)
      throw new RangeError(`degeneration: ${name} must be a positive integer, got ${value}`);
  }
  return {
    kind: 'validator',
    name: 'degeneration',
    create: () => new DegenerationGuard(maxPeriod, minRepeats, minRepeatedTokens),
  };
}

class DegenerationGuard implements EventValidator {
  private readonly ring: string[];
  /** run[p]: consecutive tokens equal to the token p positions earlier. */
  private readonly run: Int32Array;
  private count = 0;
  private partial = '';
  private found: { period: number; repeats: number } | undefined;

  constructor(
    private readonly maxPeriod: number,
    private readonly minRepeats: number,
    private readonly minRepeatedTokens: number,
  ) {
    this.ring = new Array<string>(maxPeriod + 1).fill('');
    this.run = new Int32Array(maxPeriod + 1);
  }

  check(event: StreamEvent): Verdict {
    let text: string;
    if (event.type === 'text-delta' || event.type === 'reasoning-delta') text = event.text;
    else if (event.type === 'tool-call-delta') text = event.argumentsDelta;
    else return 'pass';
    this.scan(text);
    if (this.found === undefined) return 'pass';
    const { period, repeats } = this.found;
    return reject(`output repeats a ${period}-token unit ${repeats} times`, 'retry-exact', { continuable: false });
  }

  private scan(text: string): void {
    let start = -1;
    for (let i = 0; i < text.length; i++) {
      const code = text.charCodeAt(i);
      const blank = code === 32 || code === 10 || code === 13 || code === 9;
      if (blank) {
        if (start !== -1) this.token(this.partial + text.slice(start, i));
        else if (this.partial !== '') this.token(this.partial);
        this.partial = '';
        start = -1;
      } else {
        if (start === -1) start = i;
        if (this.partial.length + (i + 1 - start) === MAX_TOKEN_CHARS) {
          this.token(this.partial + text.slice(start, i + 1));
          this.partial = '';
          start = -1;
        }
      }
      if (this.found !== undefined) return;
    }
    if (start !== -1) this.partial += text.slice(start);
  }

  private token(token: string): void {
    const size = this.ring.length;
    const position = this.count++;
    const periods = Math.min(this.maxPeriod, position);
    for (let period = 1; period <= periods; period++) {
      if (this.ring[(position - period) % size] === token) {
        const run = ++this.run[period]!;
        const span = run + period;
        if (this.found === undefined && span >= this.minRepeatedTokens && span >= period * this.minRepeats) {
          this.found = { period, repeats: Math.floor(span / period) }; // the shortest period wins
        }
      } else {
        this.run[period] = 0;
      }
    }
    this.ring[position % size] = token;
  }
}
