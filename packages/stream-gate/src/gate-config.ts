/**
 * A model group's gate configuration, as it appears in the edge's config file:
 * `{ filters: [...names + options], policy, maxAttempts, maxTotalMs, maxHeldBytes }`.
 */
import { Type, type Static } from '@sinclair/typebox';
import type { GateBudgets, ReleasePolicy } from './config.js';
import { BUDGET_LIMITS, DEFAULT_BUDGETS, RELEASE_POLICIES } from './config.js';
import { IopError, stringEnum, type Assert, type SameShape } from '@iop/core';
import type { FilterSpec } from './filters/registry.js';
import { FILTER_NAMES, createFilters } from './filters/registry.js';
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
export function createGateFromConfig(
  config: ModelGateConfig,
  options: Pick<StreamGateOptions, 'sink' | 'clock'> = {},
): StreamGate {
  if (config.policy !== undefined && !RELEASE_POLICIES.includes(config.policy)) {
    throw new IopError(
      'invalid_request',
      `policy must be one of ${RELEASE_POLICIES.join(', ')}, got "${config.policy}"`,
      { param: 'policy' },
    );
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

/**
 * A filter in a config: its name, or `{ name, options }` (options are checked when the gate is built:
 * `gateConfigProblems`).
 */
const filterSpecSchema = Type.Unsafe<FilterSpec>({
  if: { type: 'string' },
  then: { enum: [...FILTER_NAMES] },
  else: {
    type: 'object',
    additionalProperties: false,
    required: ['name'],
    properties: { name: { enum: [...FILTER_NAMES] }, options: { type: 'object' } },
  },
});

const modelGateConfigSchema = Type.Object(
  {
    filters: Type.Array(filterSpecSchema, {
      description: `Filters in order: a name (${FILTER_NAMES.join(', ')}) or { name, options }.`,
    }),
    policy: Type.Optional(
      stringEnum(RELEASE_POLICIES, {
        description: 'When events reach the client: passthrough, evidence-tail (default) or buffered.',
      }),
    ),
    maxAttempts: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: BUDGET_LIMITS.maxAttempts,
        description: `Attempts per request, continuations included (default ${DEFAULT_BUDGETS.maxAttempts}).`,
      }),
    ),
    maxTotalMs: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: BUDGET_LIMITS.maxTotalMs,
        description: `Wall time for all attempts, ms (default ${DEFAULT_BUDGETS.maxTotalMs}).`,
      }),
    ),
    maxHeldBytes: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: BUDGET_LIMITS.maxHeldBytes,
        description: `Bytes the gate may hold for one request (default ${DEFAULT_BUDGETS.maxHeldBytes}).`,
      }),
    ),
  },
  { additionalProperties: false },
);

const _shape: Assert<SameShape<Static<typeof modelGateConfigSchema>, ModelGateConfig>> = true;

/** One model's gate settings, as a JSON Schema (TypeBox) typed by `ModelGateConfig`. */
export const MODEL_GATE_CONFIG_SCHEMA = Type.Unsafe<ModelGateConfig>(modelGateConfigSchema);

/**
 * What the schema cannot see: each filter's options, checked by building the gate. Problems are
 * named by path (`gate.models.qwen3.filters[0]: unknown text tool-call format …`).
 */
export function gateConfigProblems(config: ModelGateConfig, path: string): string[] {
  try {
    createGateFromConfig(config);
    return [];
  } catch (error) {
    if (!(error instanceof IopError)) return [`${path}: ${error instanceof Error ? error.message : String(error)}`];
    const param = error.param;
    if (param !== undefined && error.message.startsWith(`${param}: `))
      return [`${path}.${param}: ${error.message.slice(param.length + 2)}`];
    return [`${path}${param === undefined ? '' : `.${param}`}: ${error.message}`];
  }
}
