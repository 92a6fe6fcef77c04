/**
 * Typed readers for untrusted client JSON, shared by every dialect. Each reads one field and
 * returns it with its type, or throws an `invalid_request` IopError (400) whose `param` names the
 * field. `readX` requires the field; `optionalX` returns `undefined` for an absent one (`undefined`
 * or `null`: the SDKs send either for an unset optional field).
 *
 * The checks are the same for every dialect; only the message wording is the dialect's own, so a
 * client reads errors in its API's voice: `fieldReaders(openaiWording)` (`temperature must be
 * between 0 and 2, got 3`) for Chat Completions and Responses, `fieldReaders(anthropicWording)`
 * (`temperature: 3 is greater than the maximum of 1`, with dotted paths such as
 * `messages.3.content.0.source`) for Messages.
 */
import { invalidRequest } from '@iop/core';

export type JsonObject = Record<string, unknown>;

export interface NumberRange {
  min?: number;
  max?: number;
}

export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `undefined` and `null` both mean "absent". */
export function isAbsent(value: unknown): value is undefined | null {
  return value === undefined || value === null;
}

/** Describes a JSON value's type for error messages. */
export function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

/** Joins a dotted field path: `path('messages', 3, 'content')` → `messages.3.content`. */
export function path(...segments: Array<string | number>): string {
  return segments.join('.');
}

/** A dialect's wording of the readers' error messages. */
export interface FieldWording {
  /** `value` is not of the `expected` JSON type (`'a string'`, `'an object'`…). */
  wrongType(param: string, expected: string, value: unknown): string;
  /** `value` is not a safe integer. */
  notInteger(param: string, value: unknown): string;
  /** The number `value` lies outside `range`. */
  outOfRange(param: string, value: number, range: NumberRange): string;
  /** `value` is not one of `allowed`. */
  notOneOf(param: string, allowed: readonly string[]): string;
}

/** OpenAI's voice (Chat Completions, Responses): `param must be …, got …`. */
export const openaiWording: FieldWording = {
  wrongType: (param, expected, value) => `${param} must be ${expected}, got ${typeName(value)}`,
  notInteger: (param, value) => `${param} must be an integer, got ${JSON.stringify(value)}`,
  outOfRange: (param, value, range) => `${param} must be between ${range.min} and ${range.max}, got ${value}`,
  notOneOf: (param, allowed) => `${param} must be one of ${allowed.map((v) => `'${v}'`).join(', ')}`,
};

/** Anthropic's voice (Messages): `param: expected …`. */
export const anthropicWording: FieldWording = {
  wrongType: (param, expected, value) => `${param}: expected ${expected}, got ${typeName(value)}`,
  notInteger: (param, value) =>
    typeof value === 'number'
      ? `${param}: expected an integer, got ${value}`
      : anthropicWording.wrongType(param, 'an integer', value),
  outOfRange: (param, value, range) =>
    range.min !== undefined && value < range.min
      ? `${param}: ${value} is less than the minimum of ${range.min}`
      : `${param}: ${value} is greater than the maximum of ${range.max}`,
  notOneOf: (param, allowed) => `${param}: expected one of ${allowed.map((v) => `'${v}'`).join(', ')}`,
};

export interface FieldReaders {
  readObject(value: unknown, param: string): JsonObject;
  readArray(value: unknown, param: string): unknown[];
  readString(value: unknown, param: string): string;
  readBoolean(value: unknown, param: string): boolean;
  /** A finite number within `range` (inclusive). */
  readNumber(value: unknown, param: string, range?: NumberRange): number;
  /** A safe integer (≤ 2^53 − 1) within `range` (inclusive; JSON numbers such as `32000.0` count as integers). */
  readInteger(value: unknown, param: string, range?: NumberRange): number;
  /** A string from a fixed set of values. */
  readEnum<T extends string>(value: unknown, param: string, allowed: readonly T[]): T;
  optionalString(value: unknown, param: string): string | undefined;
  optionalBoolean(value: unknown, param: string): boolean | undefined;
  optionalNumber(value: unknown, param: string, range?: NumberRange): number | undefined;
  optionalInteger(value: unknown, param: string, range?: NumberRange): number | undefined;
}

/** The readers, with error messages in `wording`. */
export function fieldReaders(wording: FieldWording): FieldReaders {
  const fail = (message: string, param: string): never => {
    throw invalidRequest(message, param);
  };
  const checkRange = (value: number, param: string, range: NumberRange): number => {
    if ((range.min !== undefined && value < range.min) || (range.max !== undefined && value > range.max)) {
      fail(wording.outOfRange(param, value, range), param);
    }
    return value;
  };
  const readers: FieldReaders = {
    readObject(value, param) {
      return isObject(value) ? value : fail(wording.wrongType(param, 'an object', value), param);
    },
    readArray(value, param) {
      return Array.isArray(value) ? value : fail(wording.wrongType(param, 'an array', value), param);
    },
    readString(value, param) {
      return typeof value === 'string' ? value : fail(wording.wrongType(param, 'a string', value), param);
    },
    readBoolean(value, param) {
      return typeof value === 'boolean' ? value : fail(wording.wrongType(param, 'a boolean', value), param);
    },
    readNumber(value, param, range = {}) {
      if (typeof value !== 'number' || !Number.isFinite(value))
        return fail(wording.wrongType(param, 'a number', value), param);
      return checkRange(value, param, range);
    },
    readInteger(value, param, range = {}) {
      if (typeof value !== 'number' || !Number.isSafeInteger(value))
        return fail(wording.notInteger(param, value), param);
      return checkRange(value, param, { min: range.min, max: range.max ?? Number.MAX_SAFE_INTEGER });
    },
    readEnum<T extends string>(value: unknown, param: string, allowed: readonly T[]): T {
      if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value))
        return fail(wording.notOneOf(param, allowed), param);
      return value as T;
    },
    optionalString: (value, param) => (isAbsent(value) ? undefined : readers.readString(value, param)),
    optionalBoolean: (value, param) => (isAbsent(value) ? undefined : readers.readBoolean(value, param)),
    optionalNumber: (value, param, range) => (isAbsent(value) ? undefined : readers.readNumber(value, param, range)),
    optionalInteger: (value, param, range) => (isAbsent(value) ? undefined : readers.readInteger(value, param, range)),
  };
  return readers;
}

/** The readers for OpenAI Chat Completions and Responses bodies. */
export const openaiFields = fieldReaders(openaiWording);

/** The readers for Anthropic Messages bodies. */
export const anthropicFields = fieldReaders(anthropicWording);
