/**
 * The output plan: every token the simulated model emits for one request, decided up front
 * (reasoning, content, tool calls), then cut by the token limit and the request's stop sequences.
 * The stream writer and the non-stream response both render this plan, so they always agree.
 *
 * One piece = one emitted token = one stream chunk; `completion_tokens` = number of pieces.
 */
import { randomUUID } from 'node:crypto';
import type { Knobs } from './knobs.js';
import { LOREM_WORDS, REPEATED_NGRAM, SPACED_LOREM_WORDS } from './lorem.js';
import { randomIndex, type Random } from './prng.js';
import { splitTokens } from './tokenizer.js';
import {
  generateToolCall,
  INVALID_ARGUMENTS_KINDS,
  type DeclaredTool,
  type GeneratedToolCall,
  type InvalidArgumentsKind,
} from './tool-arguments.js';

export type Piece =
  | { kind: 'reasoning'; text: string }
  | { kind: 'content'; text: string }
  /** First fragment of tool call `index`: carries id, name and `arguments: ""`. */
  | { kind: 'tool-call-start'; index: number; id: string; name: string }
  | { kind: 'tool-call-arguments'; index: number; text: string };

export type FinishReason = 'stop' | 'length' | 'tool_calls';

/** A tool call as planned (before any cut by the token limit). */
export interface PlannedToolCall extends GeneratedToolCall {
  id: string;
}

export interface OutputPlan {
  pieces: Piece[];
  finishReason: FinishReason;
  /** vLLM `stop_reason`: the matched stop string, else null. */
  stopReason: string | null;
  toolCalls: PlannedToolCall[];
}

export interface PlanInput {
  knobs: Knobs;
  random: Random;
  /** Completion-token budget: `max_completion_tokens ?? max_tokens ?? max-model-len - prompt tokens`. */
  maxTokens: number;
  /** Text of the last user message (content=echo). */
  echoText: string;
  /** JSON to emit as the content (structured output), split into small pieces; overrides words. */
  jsonText?: string;
  tools: readonly DeclaredTool[];
  /** Number of tool calls to emit (already resolved from the knob and `tool_choice`). */
  toolCallCount: number;
  /** Name every call must use (named `tool_choice`), else calls cycle through `tools`. */
  forcedToolName: string | undefined;
  stop: readonly string[];
}

/** Characters per streamed argument fragment: small enough to split keys and strings. */
const ARGUMENT_FRAGMENT_CHARS = 8;

/** Appends pieces until the budget is spent; `cut` records that output was lost. */
class PieceBudget {
  readonly pieces: Piece[] = [];
  cut = false;

  constructor(private readonly limit: number) {}

  add(piece: Piece): boolean {
    if (this.pieces.length >= this.limit) {
      this.cut = true;
      return false;
    }
    this.pieces.push(piece);
    return true;
  }
}

function addWords(
  budget: PieceBudget,
  kind: 'reasoning' | 'content',
  count: number,
  random: Random,
  first: boolean,
): void {
  for (let i = 0; i < count; i++) {
    const word =
      first && i === 0
        ? LOREM_WORDS[randomIndex(random, LOREM_WORDS.length)]!
        : SPACED_LOREM_WORDS[randomIndex(random, SPACED_LOREM_WORDS.length)]!;
    if (!budget.add({ kind, text: word })) return;
  }
}

function addReasoning(budget: PieceBudget, knobs: Knobs, random: Random): void {
  if (knobs.reasoning === 0) return;
  switch (knobs.reasoningFormat) {
    case 'fields':
      addWords(budget, 'reasoning', knobs.reasoning, random, true);
      return;
    case 'think-tags':
      budget.add({ kind: 'content', text: '<think>' });
      addWords(budget, 'content', knobs.reasoning, random, true);
      break;
    case 'think-close-only':
      addWords(budget, 'content', knobs.reasoning, random, true);
      break;
  }
  budget.add({ kind: 'content', text: '</think>' });
  budget.add({ kind: 'content', text: '\n\n' });
}

function addContent(budget: PieceBudget, input: PlanInput): void {
  const { knobs, random } = input;
  if (knobs.repeat) {
    for (let i = 0; budget.add({ kind: 'content', text: REPEATED_NGRAM[i % REPEATED_NGRAM.length]! }); i++);
    return;
  }
  if (input.jsonText !== undefined) {
    for (let i = 0; i < input.jsonText.length; i += 4)
      if (!budget.add({ kind: 'content', text: input.jsonText.slice(i, i + 4) })) return;
    return;
  }
  if (knobs.content === 'echo') {
    for (const token of splitTokens(input.echoText)) if (!budget.add({ kind: 'content', text: token })) return;
    return;
  }
  addWords(budget, 'content', knobs.outputTokens, random, true);
}

function planToolCalls(input: PlanInput): PlannedToolCall[] {
  const { tools, random, knobs } = input;
  const declared = new Set(tools.map((tool) => tool.name));
  let undeclaredName = 'undeclared_tool';
  while (declared.has(undeclaredName)) undeclaredName += '_x';
  const start = randomIndex(random, INVALID_ARGUMENTS_KINDS.length);
  let invalidCount = 0;
  const calls: PlannedToolCall[] = [];
  for (let i = 0; i < input.toolCallCount; i++) {
    const tool =
      input.forcedToolName === undefined
        ? tools[i % tools.length]!
        : (tools.find((entry) => entry.name === input.forcedToolName) ?? tools[0]!);
    let invalid: InvalidArgumentsKind | null = null;
    if (random() < knobs.invalidToolArgs)
      invalid = INVALID_ARGUMENTS_KINDS[(start + invalidCount++) % INVALID_ARGUMENTS_KINDS.length]!;
    calls.push({
      id: `chatcmpl-tool-${randomUUID().replaceAll('-', '')}`,
      ...generateToolCall(tool, random, invalid, undeclaredName),
    });
  }
  return calls;
}

function fragments(text: string, size: number): string[] {
  const parts: string[] = [];
  for (let at = 0; at < text.length;) {
    let end = Math.min(text.length, at + size);
    const last = text.charCodeAt(end - 1);
    if (last >= 0xd800 && last <= 0xdbff && end < text.length) end++; // keep surrogate pairs whole
    parts.push(text.slice(at, end));
    at = end;
  }
  return parts;
}

function addToolCalls(budget: PieceBudget, calls: readonly PlannedToolCall[], xml: boolean): void {
  if (xml) {
    for (const call of calls) {
      const text = `<tool_call>\n{"name": ${JSON.stringify(call.name)}, "arguments": ${call.arguments}}\n</tool_call>`;
      for (const token of splitTokens(text)) if (!budget.add({ kind: 'content', text: token })) return;
    }
    return;
  }
  calls.forEach((call, index) => {
    if (!budget.add({ kind: 'tool-call-start', index, id: call.id, name: call.name })) return;
    for (const text of fragments(call.arguments, ARGUMENT_FRAGMENT_CHARS))
      if (!budget.add({ kind: 'tool-call-arguments', index, text })) return;
  });
}

/**
 * Cuts the content at the earliest match of any stop sequence (the match and everything after it
 * are dropped, as vLLM does without `include_stop_str_in_output`). Returns the matched string.
 */
function applyStop(pieces: Piece[], stop: readonly string[]): string | null {
  let text = '';
  for (const piece of pieces) if (piece.kind === 'content') text += piece.text;
  let matchAt = -1;
  let matched: string | null = null;
  for (const sequence of stop) {
    if (sequence.length === 0) continue;
    const at = text.indexOf(sequence);
    if (at >= 0 && (matchAt < 0 || at < matchAt)) [matchAt, matched] = [at, sequence];
  }
  if (matched === null) return null;
  let offset = 0;
  for (let i = 0; i < pieces.length; i++) {
    const piece = pieces[i]!;
    if (piece.kind !== 'content') continue;
    if (offset + piece.text.length > matchAt) {
      const kept = piece.text.slice(0, matchAt - offset);
      pieces.length = kept.length > 0 ? i + 1 : i;
      if (kept.length > 0) pieces[i] = { kind: 'content', text: kept };
      break;
    }
    offset += piece.text.length;
  }
  return matched;
}

/** Builds the plan for one request. */
export function buildOutputPlan(input: PlanInput): OutputPlan {
  const budget = new PieceBudget(input.maxTokens);
  addReasoning(budget, input.knobs, input.random);
  const toolCalls = input.toolCallCount > 0 && input.tools.length > 0 ? planToolCalls(input) : [];
  if (toolCalls.length > 0) addToolCalls(budget, toolCalls, input.knobs.xmlToolCalls);
  else addContent(budget, input);
  const stopReason = input.stop.length > 0 ? applyStop(budget.pieces, input.stop) : null;
  let finishReason: FinishReason = 'stop';
  if (stopReason === null && budget.cut) finishReason = 'length';
  else if (stopReason === null && toolCalls.length > 0 && !input.knobs.xmlToolCalls) finishReason = 'tool_calls';
  if (input.knobs.finishLabel !== undefined) finishReason = input.knobs.finishLabel;
  return { pieces: budget.pieces, finishReason, stopReason, toolCalls };
}
