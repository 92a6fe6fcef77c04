/**
 * A model group's gate configuration, as it appears in the edge's config file:
 * `{ filters: [...names + options], policy, maxAttempts, maxTotalMs, maxHeldBytes }`.
 */
import type { GateBudgets, ReleasePolicy } from './config.js';
import { RELEASE_POLICIES } from './config.js';
import { IopError } from '@iop/core';
import type { FilterSpec } from './filters/registry.js';
import { createFilters } from './filters/registry.js';
import type { StreamGate, StreamGateOptions } from './stream-gate.js';
import { createStreamGate } from './stream-gate.js';

export interface ModelGateConfig extends Partial<GateBudgets> {
  filters: FilterSpec[];
  /** Default `evidence-tail`. */
  policy?: ReleasePolicy;
}

/**
 * Creates the gate for a model group from its config.
 * @throws IopError `invalid_request` (400) naming the bad field (unknown filter or policy, budget out of range).
 */
export function createGateFromConfig(config: ModelGateConfig, options: Pick<StreamGateOptions, 'sink' | 'clock'> = {}): StreamGate {
  if (config.policy !== undefined && !RELEASE_POLICIES.includes(config.policy)) {
    throw new IopError('invalid_request', `policy must be one of ${RELEASE_POLICIES.join(', ')}, got "${config.policy}"`, { param: 'policy' });
  }
  const budgets: Partial<GateBudgets> = {};
  if (config.maxAttempts !== undefined) budgets.maxAttempts = config.maxAttempts;
  if (config.maxTotalMs !== undefined) budgets.maxTotalMs = config.maxTotalMs;
  if (config.maxHeldBytes !== undefined) budgets.maxHeldBytes = config.maxHeldBytes;
  return createStreamGate({
    filters: createFilters(config.filters),
    ...(config.policy === undefined ? {} : { policy: config.policy }),
    budgets,
    ...options,
  });
}
