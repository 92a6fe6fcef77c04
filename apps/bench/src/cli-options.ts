/**
 * Parsing of `iop-bench` option values: ranges (`50:200` uniform, or a fixed `100`), positive
 * numbers and durations. Errors name the option and what it accepts.
 */
import { InvalidArgumentError } from 'commander';
import type { Range } from './workload.js';

/** `min:max` (uniform, inclusive) or a single integer; both ≥ 1. */
export function parseRange(value: string): Range {
  const match = /^\s*(\d+)\s*(?::\s*(\d+)\s*)?$/.exec(value);
  if (match === null) throw new InvalidArgumentError('expected an integer or min:max, e.g. 50:200');
  const min = Number(match[1]);
  const max = match[2] === undefined ? min : Number(match[2]);
  if (min < 1 || max < min) throw new InvalidArgumentError('expected 1 <= min <= max');
  return { min, max };
}

export function parsePositiveInteger(value: string): number {
  const number = Number(value);
  if (!Number.isInteger(number) || number < 1) throw new InvalidArgumentError('expected an integer >= 1');
  return number;
}

export function parsePositiveNumber(value: string): number {
  const number = Number(value);
  if (!Number.isFinite(number) || number <= 0) throw new InvalidArgumentError('expected a number > 0');
  return number;
}

/** `30` (seconds), `30s`, `2m`, `500ms` → ms. */
export function parseDuration(value: string): number {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m)?\s*$/.exec(value);
  if (match === null) throw new InvalidArgumentError('expected a duration like 30s, 2m or 500ms');
  const amount = Number(match[1]);
  const ms = match[2] === 'ms' ? amount : match[2] === 'm' ? amount * 60_000 : amount * 1000;
  if (ms <= 0) throw new InvalidArgumentError('expected a duration > 0');
  return ms;
}
