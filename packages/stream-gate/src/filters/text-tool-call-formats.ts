/**
 * Text tool-call syntaxes that models emit in their content when the server runs no tool parser:
 * - `hermes` (Hermes, Qwen 2.5/3, many fine-tunes): `<tool_call>{"name":…,"arguments":{…}}</tool_call>`,
 *   one call per block;
 * - `mistral`: `[TOOL_CALLS][{"name":…,"arguments":{…}}, …]` to the end of the output, or the
 *   v11 tokenizer form `[TOOL_CALLS]name[ARGS]{…}` (repeated for parallel calls);
 * - `llama3`: `<|python_tag|>{"name":…,"parameters":{…}}` to the end of the output (calls may be
 *   separated by `;`).
 */

/** A call parsed out of text: the name and the JSON-encoded arguments. */
export interface ParsedToolCall {
  name: string;
  arguments: string;
}

export interface TextToolCallFormat {
  readonly name: TextToolCallFormatName;
  /** The marker that opens a call. */
  readonly open: string;
  /** The marker that closes it, or undefined when the call runs to the end of the output. */
  readonly close: string | undefined;
  /** Parses the text between the markers. @returns the calls, or an error message. */
  parse(body: string): ParsedToolCall[] | string;
}

export type TextToolCallFormatName = 'hermes' | 'mistral' | 'llama3';

function parseJson(text: string): { value: unknown } | { error: string } {
  try {
    return { value: JSON.parse(text) };
  } catch (error) {
    return { error: error instanceof Error ? error.message : String(error) };
  }
}

/** `{name, arguments | parameters}` → a call; arguments may be an object or a JSON string. */
function callOf(value: unknown): ParsedToolCall | string {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return 'a tool call must be a JSON object';
  const record = value as Record<string, unknown>;
  if (typeof record.name !== 'string' || record.name === '') return 'a tool call needs a "name" string';
  const args = record.arguments ?? record.parameters ?? {};
  return { name: record.name, arguments: typeof args === 'string' ? args : JSON.stringify(args) };
}

function callsOf(values: readonly unknown[]): ParsedToolCall[] | string {
  const calls: ParsedToolCall[] = [];
  for (const value of values) {
    const call = callOf(value);
    if (typeof call === 'string') return call;
    calls.push(call);
  }
  return calls;
}

const hermes: TextToolCallFormat = {
  name: 'hermes',
  open: '<tool_call>',
  close: '</tool_call>',
  parse(body) {
    const parsed = parseJson(body);
    if ('error' in parsed) return `tool call is not valid JSON: ${parsed.error}`;
    return callsOf([parsed.value]);
  },
};

const mistral: TextToolCallFormat = {
  name: 'mistral',
  open: '[TOOL_CALLS]',
  close: undefined,
  parse(body) {
    const trimmed = body.trim();
    if (trimmed.startsWith('[') || trimmed.startsWith('{')) {
      const parsed = parseJson(trimmed);
      if ('error' in parsed) return `tool calls are not valid JSON: ${parsed.error}`;
      return callsOf(Array.isArray(parsed.value) ? parsed.value : [parsed.value]);
    }
    const calls: ParsedToolCall[] = [];
    for (const part of trimmed.split('[TOOL_CALLS]')) {
      const args = part.indexOf('[ARGS]');
      if (args === -1) return 'expected name[ARGS]{…} after [TOOL_CALLS]';
      const name = part.slice(0, args).trim();
      const parsed = parseJson(part.slice(args + '[ARGS]'.length));
      if ('error' in parsed) return `arguments of ${name} are not valid JSON: ${parsed.error}`;
      const call = callOf({ name, arguments: parsed.value });
      if (typeof call === 'string') return call;
      calls.push(call);
    }
    return calls;
  },
};

const llama3: TextToolCallFormat = {
  name: 'llama3',
  open: '<|python_tag|>',
  close: undefined,
  parse(body) {
    const trimmed = body.trim().replace(/<\|eom_id\|>$|<\|eot_id\|>$/, '');
    const whole = parseJson(trimmed);
    if (!('error' in whole)) return callsOf(Array.isArray(whole.value) ? whole.value : [whole.value]);
    const values: unknown[] = [];
    for (const part of trimmed.split(/;\s*(?=\{)/)) {
      const parsed = parseJson(part);
      if ('error' in parsed) return `tool call is not valid JSON: ${parsed.error}`;
      values.push(parsed.value);
    }
    return callsOf(values);
  },
};

export const TEXT_TOOL_CALL_FORMATS: Readonly<Record<TextToolCallFormatName, TextToolCallFormat>> = {
  hermes,
  mistral,
  llama3,
};
