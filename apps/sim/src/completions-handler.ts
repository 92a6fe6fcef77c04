/**
 * `POST /v1/completions`, the legacy text completions as vLLM serves them (docs/protocols.md
 * "Legacy completions"): one choice per prompt and `n` (index = prompt × n + j), each planned by
 * the output plan (lorem words, or with `content=echo` the prompt's text; cut by `max_tokens`,
 * default 16, and `stop`). `suffix` is accepted (fill-in-the-middle: the middle is planned like
 * any output), `echo` puts the prompt before the text, `logprobs` gives deterministic
 * `{tokens, token_logprobs, top_logprobs, text_offset}` (with `echo` over the prompt too, its
 * first token `null`). Streams are `text_completion` chunks (`completion-stream.ts`), non-stream
 * answers one object after TTFT + ITL per token; the faults and latency knobs as for chat.
 */
import { randomUUID } from 'node:crypto';
import { answerJsonLater, beginAux, objectBody, servedModel } from './aux-exchange.js';
import type { SimContext } from './chat-handler.js';
import { streamTextCompletion, type TextChoice } from './completion-stream.js';
import type { Exchange } from './exchange.js';
import { buildOutputPlan } from './output-plan.js';
import { mixSeed, seededRandom } from './prng.js';
import type { Knobs } from './knobs.js';
import { SimInputError } from './sim-error.js';
import { countTokens, splitTokens } from './tokenizer.js';

/** OpenAI's and vLLM's `max_tokens` default for legacy completions. */
export const DEFAULT_MAX_TOKENS = 16;

function isTokens(value: unknown): value is number[] {
  return (
    Array.isArray(value) &&
    value.length > 0 &&
    value.every((token) => Number.isInteger(token) && (token as number) >= 0)
  );
}

/** The prompts as text (token ids as `<id>` words: the sim has no detokenizer) and their token counts. */
function readPrompts(prompt: unknown): Array<{ text: string; tokens: number }> {
  const one = (entry: string | number[]) =>
    typeof entry === 'string'
      ? { text: entry, tokens: countTokens(entry) }
      : { text: entry.map((id) => ` <${id}>`).join(''), tokens: entry.length };
  if (typeof prompt === 'string' || isTokens(prompt)) return [one(prompt)];
  if (
    Array.isArray(prompt) &&
    prompt.length > 0 &&
    prompt.every((entry) => typeof entry === 'string' || isTokens(entry))
  )
    return (prompt as Array<string | number[]>).map(one);
  throw new SimInputError('prompt must be a string, an array of strings, token ids or arrays of token ids', {
    param: 'prompt',
  });
}

function integer(value: unknown, param: string, min: number, max: number, fallback: number): number {
  if (value === undefined || value === null) return fallback;
  if (!Number.isInteger(value) || (value as number) < min || (value as number) > max)
    throw new SimInputError(`${param} must be an integer in [${min}, ${max}]`, { param });
  return value as number;
}

function stopsOf(stop: unknown): string[] {
  if (stop === undefined || stop === null) return [];
  if (typeof stop === 'string') return [stop];
  if (Array.isArray(stop) && stop.every((entry) => typeof entry === 'string')) return stop as string[];
  throw new SimInputError('stop must be a string or an array of strings', { param: 'stop' });
}

/**
 * Deterministic logprobs of `tokens` (the first `nullFirst` token gets null, as an echoed prompt's first token does).
 */
function logprobsOf(tokens: readonly string[], top: number, seed: number, nullFirst: boolean): TextChoice['logprobs'] {
  const random = seededRandom(seed);
  let offset = 0;
  const result = {
    tokens: [...tokens],
    token_logprobs: [] as Array<number | null>,
    top_logprobs: [] as Array<Record<string, number> | null>,
    text_offset: [] as number[],
  };
  tokens.forEach((token, index) => {
    result.text_offset.push(offset);
    offset += token.length;
    if (index === 0 && nullFirst) {
      result.token_logprobs.push(null);
      result.top_logprobs.push(null);
      return;
    }
    const logprob = -Math.round(random() * 3000) / 1000;
    result.token_logprobs.push(logprob);
    const alternatives: Record<string, number> = { [token]: logprob };
    for (let k = 1; k < top; k++) alternatives[`${token.trimStart()}_${k}`] = logprob - k;
    result.top_logprobs.push(alternatives);
  });
  return result;
}

interface ChoicePlan {
  prompts: Array<{ text: string; tokens: number }>;
  n: number;
  echo: boolean;
  maxTokens: number;
  logprobs: number | undefined;
  stop: string[];
  suffixTokens: number;
  seed: number;
  knobs: Knobs;
}

/** Every choice of the request: prompt × n, each planned with its own seeded draw. */
function planChoices(plan: ChoicePlan): TextChoice[] {
  const { knobs, n, echo, maxTokens, logprobs, seed } = plan;
  const choices: TextChoice[] = [];
  plan.prompts.forEach((prompt, promptIndex) => {
    for (let j = 0; j < n; j++) {
      const index = promptIndex * n + j;
      const output = buildOutputPlan({
        knobs: { ...knobs, reasoning: 0, xmlToolCalls: false },
        random: seededRandom(mixSeed(seed, index)),
        maxTokens: Math.min(maxTokens, Math.max(0, knobs.maxModelLen - prompt.tokens - plan.suffixTokens)),
        echoText: knobs.content === 'echo' ? prompt.text : '',
        tools: [],
        toolCallCount: 0,
        forcedToolName: undefined,
        stop: plan.stop,
      });
      const pieces = output.pieces.map((piece) => ('text' in piece ? piece.text : ''));
      const echoed = echo ? splitTokens(prompt.text) : [];
      choices.push({
        index,
        echo: echo ? prompt.text : '',
        pieces,
        finishReason: maxTokens === 0 ? 'length' : output.finishReason === 'tool_calls' ? 'stop' : output.finishReason,
        stopReason: output.stopReason,
        logprobs:
          logprobs === undefined
            ? null
            : logprobsOf([...echoed, ...pieces], Math.max(1, logprobs), mixSeed(seed, index + 0x10000), echo),
      });
    }
  });
  return choices;
}

export function handleCompletions(context: SimContext, exchange: Exchange, raw: unknown): void {
  const body = objectBody(raw);
  const served = servedModel(context, exchange, body);
  if (served === undefined) return;
  const prompts = readPrompts(body.prompt);
  if (body.suffix !== undefined && body.suffix !== null && typeof body.suffix !== 'string')
    throw new SimInputError('suffix must be a string', { param: 'suffix' });
  const suffixTokens = typeof body.suffix === 'string' ? countTokens(body.suffix) : 0;
  const echo = body.echo === true;
  const maxTokens = integer(body.max_tokens, 'max_tokens', echo ? 0 : 1, 1 << 24, DEFAULT_MAX_TOKENS);
  const n = integer(body.n, 'n', 1, 128, 1);
  const logprobs =
    body.logprobs === undefined || body.logprobs === null ? undefined : integer(body.logprobs, 'logprobs', 0, 20, 0);
  const stop = stopsOf(body.stop);
  const longest = Math.max(...prompts.map((prompt) => prompt.tokens + suffixTokens));
  const request = beginAux(context, exchange, served.suffixKnobs, longest);
  if (request === undefined) return;
  const { knobs } = request;
  const seed = typeof body.seed === 'number' ? body.seed : mixSeed(knobs.seed, exchange.record.id);
  const choices = planChoices({ prompts, n, echo, maxTokens, logprobs, stop, suffixTokens, seed, knobs });
  const completionTokens = choices.reduce((sum, choice) => sum + choice.pieces.length, 0);
  const promptTokens = prompts.reduce((sum, prompt) => sum + prompt.tokens + suffixTokens, 0);
  exchange.record.output = { finishReason: choices[0]!.finishReason, promptTokens, completionTokens, toolCalls: [] };
  const usage = {
    prompt_tokens: promptTokens,
    completion_tokens: completionTokens,
    total_tokens: promptTokens + completionTokens,
  };
  const id = `cmpl-${randomUUID().replaceAll('-', '')}`;
  const created = Math.floor(Date.now() / 1000);
  const scale = context.timeScale;
  const ttftMs = (request.fault === 'slow-first-token' ? knobs.slowTtftMs : knobs.ttftMs) * scale;
  if (body.stream === true) {
    const options = body.stream_options as { include_usage?: unknown } | undefined;
    const includeUsage = options?.include_usage === true || knobs.forceUsage;
    const faultAfter = knobs.faultAfter ?? Math.floor(completionTokens / 2);
    streamTextCompletion(
      exchange,
      { id, created, model: served.model, choices, usage: includeUsage ? usage : undefined },
      {
        ttftMs,
        itlMs: knobs.itlMs * scale,
        fault: request.midStream,
        faultAfter,
      },
    );
    return;
  }
  const answer = JSON.stringify({
    id,
    object: 'text_completion',
    created,
    model: served.model,
    choices: choices.map((choice) => ({
      index: choice.index,
      text: choice.echo + choice.pieces.join(''),
      logprobs: choice.logprobs,
      finish_reason: choice.finishReason,
      stop_reason: choice.stopReason,
    })),
    usage,
  });
  const longestChoice = Math.max(...choices.map((choice) => choice.pieces.length));
  answerJsonLater(exchange, answer, ttftMs + Math.max(0, longestChoice - 1) * knobs.itlMs * scale, request.midStream);
}
