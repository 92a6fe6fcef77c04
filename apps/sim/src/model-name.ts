/**
 * Model-name suffix: knobs that travel inside the model name, so they survive a gateway that
 * forwards only the model.
 *
 * Grammar: `<base>[@<item>(,<item>)*]`, `<item>` = `<knob>=<value>` or `<knob>` (a flag, = true).
 * The base is everything before the first `@`. Examples: `sim-model@ttft-ms=200,itl-ms=5`,
 * `sim-model@fault=cut,fault-after=3`, `sim-model@tool-calls=2,xml-tool-calls`.
 * Responses echo the full requested name (suffix included) in `model`.
 */
import { parseKnob } from './knob-specs.js';
import type { Knobs } from './knobs.js';
import { SimInputError } from './sim-error.js';

export interface ModelName {
  /** The configured model the request targets. */
  base: string;
  /** Knobs from the suffix; undefined when there is none. */
  knobs: Partial<Knobs> | undefined;
}

/**
 * Splits a requested model name into base model and knob overrides.
 * @throws SimInputError (400, param `model`) on an unknown knob or a bad value.
 */
export function parseModelName(requested: string): ModelName {
  const at = requested.indexOf('@');
  if (at < 0) return { base: requested, knobs: undefined };
  const knobs: Partial<Knobs> = {};
  for (const item of requested.slice(at + 1).split(',')) {
    if (item.length === 0) continue;
    const equals = item.indexOf('=');
    try {
      Object.assign(
        knobs,
        equals < 0 ? parseKnob(item, undefined) : parseKnob(item.slice(0, equals), item.slice(equals + 1)),
      );
    } catch (error) {
      if (error instanceof SimInputError) throw new SimInputError(`model suffix: ${error.message}`, { param: 'model' });
      throw error;
    }
  }
  return { base: requested.slice(0, at), knobs };
}
