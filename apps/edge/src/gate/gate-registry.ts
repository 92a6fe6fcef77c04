/**
 * One stream gate per model (from the edge config's `gate` section: a default plus per-model
 * overrides), and the rule that decides when a Chat Completions request may stay on the
 * passthrough path: when no configured filter has anything to look at in it.
 */
import { createGateFromConfig, type GateSink, type ModelGateConfig, type StreamGate } from '@iop/stream-gate';

export interface GateSection {
  /** Applies to every model without an entry in `models`. */
  default: ModelGateConfig;
  models: Record<string, ModelGateConfig>;
}

/**
 * The default: validate tool calls against their schemas and structured output, catch loops and
 * empty answers; evidence-tail release; 3 attempts. `reasoning` and `text-tool-calls` are per
 * model (they depend on the model's chat template and on the server's parsers).
 */
export const DEFAULT_GATE: GateSection = {
  default: {
    filters: ['tool-calls', 'structured-output', 'degeneration', 'empty-output'],
    policy: 'evidence-tail',
    maxAttempts: 3,
  },
  models: {},
};

/**
 * A policy as one bounded metric label: the release policy, then `+` and the `agent-output` mode if any
 * (`buffered+strict`).
 */
export function policyLabel(policy: { release: string; agentOutput?: string }): string {
  return policy.agentOutput === undefined ? policy.release : `${policy.release}+${policy.agentOutput}`;
}

const filterName = (spec: ModelGateConfig['filters'][number]) => (typeof spec === 'string' ? spec : spec.name);

export class GateRegistry {
  private readonly gates = new Map<string, { gate: StreamGate; config: ModelGateConfig }>();
  private readonly fallback: { gate: StreamGate; config: ModelGateConfig };

  /** @throws IopError (400) naming the bad field of a gate config. */
  constructor(section: GateSection, sink: GateSink) {
    this.fallback = { gate: createGateFromConfig(section.default, { sink }), config: section.default };
    for (const [model, config] of Object.entries(section.models))
      this.gates.set(model, { gate: createGateFromConfig(config, { sink }), config });
  }

  gateFor(model: string): StreamGate {
    return (this.gates.get(model) ?? this.fallback).gate;
  }

  /** The output policy a model's answers get, for logs: the release policy and the `agent-output` mode, if any. */
  policyOf(model: string): { release: string; agentOutput?: string } {
    const { config } = this.gates.get(model) ?? this.fallback;
    const agent = config.filters.find((spec) => filterName(spec) === 'agent-output');
    const mode = typeof agent === 'object' ? (agent.options as { mode?: string } | undefined)?.mode : undefined;
    return mode === undefined
      ? { release: config.policy ?? 'evidence-tail' }
      : { release: config.policy ?? 'evidence-tail', agentOutput: mode };
  }

  /**
   * Whether a Chat Completions body needs the normalized path: the model's gate rewrites content
   * (reasoning extraction, text tool calls), or validates something this request has (tools,
   * a JSON response format). Loop and empty-output guards alone do not force it. A `tool_choice`
   * other than `auto` always does, whatever the model's filters: the gate enforces it (its
   * `tool-choice` filter holds a forced call's answer until the call shows, so a text answer is
   * retried before any byte reaches the client).
   */
  needsContent(model: string, body: Record<string, unknown>): boolean {
    const choice = body.tool_choice;
    if (choice !== undefined && choice !== null && choice !== 'auto') return true;
    const { config } = this.gates.get(model) ?? this.fallback;
    if (config.policy === 'passthrough' && config.filters.length === 0) return false;
    for (const spec of config.filters) {
      const name = filterName(spec);
      if (name === 'reasoning' || name === 'text-tool-calls' || name === 'agent-output') return true;
      if (name === 'tool-calls' && Array.isArray(body.tools) && body.tools.length > 0) return true;
      if (name === 'structured-output') {
        const format = (body.response_format as { type?: unknown } | undefined)?.type;
        if (format === 'json_object' || format === 'json_schema') return true;
      }
    }
    return false;
  }
}
