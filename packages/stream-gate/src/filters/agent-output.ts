/**
 * Output policy for agent clients that parse XML tool calls from the text (Cline, Roo Code:
 * `<tool_name><param>…</param></tool_name>`) and need every turn to end in a tool (name
 * `agent-output`, per model in the gate config):
 *
 * - `strict`: the turn must end in a declared tool — an XML element closing the text
 *   (`</name>` last, its `<name>` before it) or a native tool call — else it is rejected and
 *   retried with a corrective message, like an invalid native tool call. Text streams per the
 *   release policy.
 * - `streamBuffer`: as `strict`, and nothing of the turn is released before it is validated (its
 *   text is held to the finish), so a retried turn never shows.
 * - `xmlCompletionTool`: a plain-text answer (no tool at its end) is wrapped in the completion
 *   tool, `<attempt_completion>\n<result>\n…\n</result>\n</attempt_completion>` by default,
 *   instead of failing the client's parser. Its text is held to the finish to decide.
 *
 * Declared tools: `xmlTools` of the options plus the request's native tools; with neither, any
 * element name counts. A turn cut by the output limit (`length`) passes as generated.
 */
import type { StreamEvent } from '@iop/core';
import type { EventTransformer, EventValidator, GateFilter, Rejection, Verdict } from '../filter.js';
import { reject } from '../filter.js';

export type AgentOutputMode = 'strict' | 'streamBuffer' | 'xmlCompletionTool';
export const AGENT_OUTPUT_MODES: readonly AgentOutputMode[] = ['strict', 'streamBuffer', 'xmlCompletionTool'];

export interface AgentOutputOptions {
  mode: AgentOutputMode;
  /** The client's XML tool names (e.g. Cline's `read_file`, `execute_command`, `attempt_completion`). */
  xmlTools?: string[];
  /** `xmlCompletionTool`: the tool a plain answer is wrapped in. Default `attempt_completion`. */
  completionTool?: string;
  /** `xmlCompletionTool`: the tool's parameter holding the answer. Default `result`. */
  resultParameter?: string;
}

const CLOSING_TAG = /<\/([A-Za-z_][\w-]*)>\s*$/;
const NAME = /^[A-Za-z_][\w-]*$/;

/** The name of the XML tool element that ends `text`, if any. */
export function closingTool(text: string): string | undefined {
  const match = CLOSING_TAG.exec(text);
  if (match === null) return undefined;
  const name = match[1]!;
  return text.lastIndexOf(`<${name}>`, match.index) === -1 ? undefined : name;
}

export function agentOutput(options: AgentOutputOptions): GateFilter[] {
  if (!AGENT_OUTPUT_MODES.includes(options.mode))
    throw new Error(
      `agent-output: mode must be one of ${AGENT_OUTPUT_MODES.join(', ')}, got ${JSON.stringify(options.mode)}`,
    );
  const completionTool = options.completionTool ?? 'attempt_completion';
  const resultParameter = options.resultParameter ?? 'result';
  for (const name of [...(options.xmlTools ?? []), completionTool, resultParameter]) {
    if (!NAME.test(name)) throw new Error(`agent-output: ${JSON.stringify(name)} is not an XML element name`);
  }
  const declaredOf = (tools: readonly { name: string }[] | undefined): Set<string> =>
    new Set([...(options.xmlTools ?? []), ...(tools ?? []).map((tool) => tool.name)]);
  if (options.mode === 'xmlCompletionTool') {
    return [
      {
        kind: 'transformer',
        name: 'agent-output',
        create: (context) =>
          new CompletionToolWrapper(
            declaredOf(context.request.tools),
            completionTool,
            resultParameter,
            context.continuation?.text ?? '',
          ),
      },
    ];
  }
  return [
    {
      kind: 'validator',
      name: 'agent-output',
      create: (context) =>
        new EndsInTool(
          declaredOf(context.request.tools),
          options.mode === 'streamBuffer',
          context.continuation?.text ?? '',
        ),
    },
  ];
}

function isDeclared(declared: ReadonlySet<string>, name: string | undefined): boolean {
  return name !== undefined && (declared.size === 0 || declared.has(name));
}

class EndsInTool implements EventValidator {
  private text: string;
  private calledTool = false;

  constructor(
    private readonly declared: ReadonlySet<string>,
    private readonly hold: boolean,
    prefix: string,
  ) {
    this.text = prefix;
  }

  check(event: StreamEvent): Verdict {
    switch (event.type) {
      case 'text-delta':
        this.text += event.text;
        return this.hold ? 'hold' : 'pass';
      case 'tool-call-delta':
        if (event.name !== undefined) this.calledTool = true;
        return this.hold ? 'hold' : 'pass';
      case 'finish':
        return event.reason === 'length' || this.calledTool || isDeclared(this.declared, closingTool(this.text))
          ? 'pass'
          : this.rejection();
      default:
        return this.hold && this.text.length > 0 ? 'hold' : 'pass';
    }
  }

  private rejection(): Rejection {
    const names = [...this.declared].join(', ');
    return reject('the turn did not end in a tool call', 'retry-with-patch', {
      patch:
        'Your reply must end with a tool call in the XML format of the system prompt' +
        (names === '' ? '.' : ` (one of: ${names}).`) +
        ' If the task is done, use the completion tool to present the result.',
    });
  }
}

class CompletionToolWrapper implements EventTransformer {
  private held = '';
  private calledTool = false;

  constructor(
    private readonly declared: ReadonlySet<string>,
    private readonly completionTool: string,
    private readonly resultParameter: string,
    private readonly prefix: string,
  ) {}

  get heldBytes(): number {
    return Buffer.byteLength(this.held);
  }

  push(event: StreamEvent, out: StreamEvent[]): undefined {
    if (event.type === 'text-delta' && !this.calledTool) {
      this.held += event.text;
      return undefined;
    }
    if (event.type === 'tool-call-delta') {
      this.calledTool = true;
      this.release(out, this.held);
    } else if (event.type === 'finish') {
      const text = this.held;
      const plain =
        !this.calledTool &&
        event.reason !== 'length' &&
        text.trim() !== '' &&
        !isDeclared(this.declared, closingTool(this.prefix + text));
      this.release(out, plain ? this.wrap(text) : text);
    }
    out.push(event);
    return undefined;
  }

  private wrap(text: string): string {
    const { completionTool: tool, resultParameter: parameter } = this;
    return `<${tool}>\n<${parameter}>\n${text.trim()}\n</${parameter}>\n</${tool}>`;
  }

  private release(out: StreamEvent[], text: string): void {
    if (text.length > 0) out.push({ type: 'text-delta', text });
    this.held = '';
  }
}
