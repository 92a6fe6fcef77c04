/**
 * Typed readers for untrusted JSON. Each reads one field and returns it with its type, or throws
 * an `invalid_request` IopError (400) whose `param` is the field path in Anthropic's own style
 * (`messages.3.content.0.source`, as the Messages API reports it in its 400s).
 */
import { invalidRequest } from '@iop/core';

export type JsonObject = Record<string, unknown>;

/** Joins a field path: `path('messages', 3, 'content')` → `messages.3.content`. */
export function path(...segments: Array<string | number>): string {
  return segments.join('.');
}

export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Describes a JSON value's type for error messages. */
function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

function wrongType(param: string, expected: string, value: unknown): never {
  throw invalidRequest(`${param}: expected ${expected}, got ${typeName(value)}`, param);
}

export function readObject(value: unknown, param: string): JsonObject {
  if (!isObject(value)) wrongType(param, 'an object', value);
  return value;
}

export function readArray(value: unknown, param: string): unknown[] {
  if (!Array.isArray(value)) wrongType(param, 'an array', value);
  return value;
}

export function readString(value: unknown, param: string): string {
  if (typeof value !== 'string') wrongType(param, 'a string', value);
  return value;
}

export function readBoolean(value: unknown, param: string): boolean {
  if (typeof value !== 'boolean') wrongType(param, 'a boolean', value);
  return value;
}

/** A finite number within `[min, max]`. */
export function readNumber(value: unknown, param: string, range: { min?: number; max?: number } = {}): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) wrongType(param, 'a number', value);
  if (range.min !== undefined && value < range.min) {
    throw invalidRequest(`${param}: ${value} is less than the minimum of ${range.min}`, param);
  }
  if (range.max !== undefined && value > range.max) {
    throw invalidRequest(`${param}: ${value} is greater than the maximum of ${range.max}`, param);
  }
  return value;
}

/** A safe integer (≤ 2^53 − 1) `>= min` (JSON numbers such as `32000.0` count as integers). */
export function readInteger(value: unknown, param: string, min: number): number {
  if (typeof value !== 'number') wrongType(param, 'an integer', value);
  if (!Number.isSafeInteger(value)) throw invalidRequest(`${param}: expected an integer, got ${value}`, param);
  if (value < min) throw invalidRequest(`${param}: ${value} is less than the minimum of ${min}`, param);
  return value;
}

/** A string from a fixed set of values. */
export function readEnum<T extends string>(value: unknown, param: string, allowed: readonly T[]): T {
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
    throw invalidRequest(`${param}: expected one of ${allowed.map((v) => `'${v}'`).join(', ')}`, param);
  }
  return value as T;
}

/** `undefined` and `null` both mean "absent" (the SDKs send either for unset optional fields). */
export function isAbsent(value: unknown): value is undefined | null {
  return value === undefined || value === null;
}
