/**
 * Per-request overrides, sent by clients in the `x-iop-gate` header (the edge reads it and calls
 * `parseGateHeader`). Syntax: `key=value` pairs separated by `;`, e.g.
 * `policy=buffered; attempts=2; total-ms=60000; held-bytes=1048576`.
 *
 * | key          | value                                         |
 * | ------------ | --------------------------------------------- |
 * | `policy`     | `passthrough` \| `evidence-tail` \| `buffered` |
 * | `attempts`   | integer ≥ 1                                   |
 * | `total-ms`   | integer ≥ 1 (ms)                              |
 * | `held-bytes` | integer ≥ 1 (bytes)                           |
 *
 * A header may choose any policy but only tighten budgets: a value above the model group's
 * configured budget is a 400 (`applyGateOverrides`).
 */
import { IopError } from '@iop/core';
import type { GateBudgets, ReleasePolicy } from './config.js';
import { RELEASE_POLICIES } from './config.js';

export const GATE_HEADER = 'x-iop-gate';

export interface GateOverrides {
  policy?: ReleasePolicy;
  maxAttempts?: number;
  maxTotalMs?: number;
  maxHeldBytes?: number;
}

const BUDGET_KEYS: Record<string, keyof GateBudgets> = {
  attempts: 'maxAttempts',
  'total-ms': 'maxTotalMs',
  'held-bytes': 'maxHeldBytes',
};

function invalid(message: string): IopError {
  return new IopError('invalid_request', `${GATE_HEADER}: ${message}`, { param: GATE_HEADER });
}

/**
 * Parses the header value. Empty pairs are ignored; keys are case-insensitive.
 * @throws IopError `invalid_request` (400, param `x-iop-gate`) on an unknown key, a malformed pair
 *   or a bad value.
 */
export function parseGateHeader(value: string): GateOverrides {
  const overrides: GateOverrides = {};
  for (const rawPair of value.split(';')) {
    const pair = rawPair.trim();
    if (pair === '') continue;
    const equals = pair.indexOf('=');
    if (equals <= 0) throw invalid(`expected key=value, got "${pair}"`);
    const key = pair.slice(0, equals).trim().toLowerCase();
    const item = pair.slice(equals + 1).trim();
    if (key === 'policy') {
      if (!(RELEASE_POLICIES as readonly string[]).includes(item)) {
        throw invalid(`policy must be one of ${RELEASE_POLICIES.join(', ')}, got "${item}"`);
      }
      overrides.policy = item as ReleasePolicy;
      continue;
    }
    const budget = BUDGET_KEYS[key];
    if (budget === undefined)
      throw invalid(`unknown key "${key}" (known: policy, ${Object.keys(BUDGET_KEYS).join(', ')})`);
    if (!/^[0-9]{1,10}$/.test(item) || Number(item) < 1)
      throw invalid(`${key} must be a positive integer, got "${item}"`);
    overrides[budget] = Number(item);
  }
  return overrides;
}

/**
 * Applies overrides to a group's policy and budgets.
 * @throws IopError `invalid_request` (400) when an override exceeds the configured budget.
 */
export function applyGateOverrides(
  policy: ReleasePolicy,
  budgets: GateBudgets,
  overrides: GateOverrides | undefined,
): { policy: ReleasePolicy; budgets: GateBudgets } {
  if (overrides === undefined) return { policy, budgets };
  const result: GateBudgets = { ...budgets };
  for (const [header, key] of Object.entries(BUDGET_KEYS)) {
    const value = overrides[key];
    if (value === undefined) continue;
    if (value > budgets[key]) throw invalid(`${header}=${value} exceeds the configured limit ${budgets[key]}`);
    result[key] = value;
  }
  return { policy: overrides.policy ?? policy, budgets: result };
}
