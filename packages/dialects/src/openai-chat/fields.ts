/**
 * Typed readers for client JSON: each returns the value or throws an `invalid_request` IopError
 * naming the field (`param`, e.g. `messages[2].content`).
 */
import { invalidRequest } from '@iop/core';

export type JsonObject = Record<string, unknown>;

export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

export function expectObject(value: unknown, param: string): JsonObject {
  if (!isObject(value)) throw invalidRequest(`${param} must be an object, got ${typeName(value)}`, param);
  return value;
}

export function expectString(value: unknown, param: string): string {
  if (typeof value !== 'string') throw invalidRequest(`${param} must be a string, got ${typeName(value)}`, param);
  return value;
}

export function optionalString(value: unknown, param: string): string | undefined {
  return value === undefined || value === null ? undefined : expectString(value, param);
}

export function optionalBoolean(value: unknown, param: string): boolean | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'boolean') throw invalidRequest(`${param} must be a boolean, got ${typeName(value)}`, param);
  return value;
}

/** A finite number within [min, max] (inclusive). */
export function optionalNumber(value: unknown, param: string, min: number, max: number): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value)) throw invalidRequest(`${param} must be a number, got ${typeName(value)}`, param);
  if (value < min || value > max) throw invalidRequest(`${param} must be between ${min} and ${max}, got ${value}`, param);
  return value;
}

/** A safe integer within [min, max] (inclusive). */
export function optionalInteger(value: unknown, param: string, min: number, max = Number.MAX_SAFE_INTEGER): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) throw invalidRequest(`${param} must be an integer, got ${JSON.stringify(value)}`, param);
  if (value < min || value > max) throw invalidRequest(`${param} must be between ${min} and ${max}, got ${value}`, param);
  return value;
}

export function expectArray(value: unknown, param: string): unknown[] {
  if (!Array.isArray(value)) throw invalidRequest(`${param} must be an array, got ${typeName(value)}`, param);
  return value;
}
