/**
 * The soak's users: closed-loop workers that talk to the edge with the official clients (`openai`
 * for Chat Completions and Responses, `@anthropic-ai/sdk` for Messages), stream and non-stream,
 * some of which abort mid-answer or stop reading for a while. Each request ends as an Outcome.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { seededRandom, sleep } from '@iop/core';
import type { Range } from '../workload.js';

export type SoakDialect = 'chat' | 'responses' | 'messages';
export type Behaviour = 'normal' | 'abort' | 'slow-reader';

export interface Outcome {
  dialect: SoakDialect;
  stream: boolean;
  behaviour: Behaviour;
  /** Completed as the behaviour intends: a whole answer, or (abort) cut by the client itself. */
  ok: boolean;
  /**
   * Why it failed: `http <status> <code or type>`, `in-band <type>`, `connection`, `timeout`, `truncated` (a stream
   * that ended without its final event).
   */
  errorClass?: string;
  /** The client was told to come back later (it could not connect, or got a 429/503/529 refusal): its worker pauses. */
  backOff?: true;
  /** Date.now() at start and end. */
  startedAt: number;
  endedAt: number;
}

export interface ClientOptions {
  origin: string;
  apiKey: string;
  model: string;
  maxTokens: Range;
  /** Share of requests that abort after `abortAfterMs` (uniform). */
  abortShare: number;
  abortAfterMs: Range;
  /** Share of streams whose reader pauses once for `pauseMs` (uniform) after the first event. */
  slowReaderShare: number;
  pauseMs: Range;
  seed: number;
}

const WORDS =
  'the a ship sailed over quiet water while gulls circled near harbour lights and old sailors told stories'.split(' ');
/** A few long shared prefixes (system-prompt-like), so the sims' prefix caches see hits. */
const PREFIXES = Array.from(
  { length: 4 },
  (_, k) =>
    `House rules ${k}: ${Array.from({ length: 300 }, (_, i) => WORDS[(i * (k + 3)) % WORDS.length]).join(' ')}.`,
);

/** Pause of a worker after a connection error or a 429/503/529 refusal (ms). */
const BACK_OFF_MS = 1_000;
const BACK_OFF_STATUSES = new Set([429, 503, 529]);

/** Whether the error tells the client to come back later: no connection (not a timeout), or a 429/503/529 refusal. */
export function backsOff(error: unknown): boolean {
  if (error instanceof OpenAI.APIConnectionTimeoutError || error instanceof Anthropic.APIConnectionTimeoutError)
    return false;
  if (error instanceof OpenAI.APIConnectionError || error instanceof Anthropic.APIConnectionError) return true;
  return (
    (error instanceof OpenAI.APIError || error instanceof Anthropic.APIError) &&
    error.status !== undefined &&
    BACK_OFF_STATUSES.has(error.status)
  );
}

/** An error's class as the report groups it. */
export function classify(error: unknown): string {
  if (error instanceof OpenAI.APIUserAbortError || error instanceof Anthropic.APIUserAbortError) return 'aborted';
  if (error instanceof OpenAI.APIConnectionTimeoutError || error instanceof Anthropic.APIConnectionTimeoutError)
    return 'timeout';
  if (error instanceof OpenAI.APIConnectionError || error instanceof Anthropic.APIConnectionError) return 'connection';
  if (error instanceof OpenAI.APIError) {
    const type = error.code ?? error.type ?? '';
    return error.status === undefined ? `in-band ${type}`.trim() : `http ${error.status} ${type}`.trim();
  }
  if (error instanceof Anthropic.APIError) {
    const type = (error.error as { error?: { type?: string } } | undefined)?.error?.type ?? '';
    return error.status === undefined ? `in-band ${type}`.trim() : `http ${error.status} ${type}`.trim();
  }
  return error instanceof Error ? error.name : 'unknown';
}

export class SoakClients {
  private readonly openai: OpenAI;
  private readonly anthropic: Anthropic;
  private readonly random: () => number;
  private stopped = false;
  private readonly controllers = new Set<AbortController>();

  constructor(
    private readonly options: ClientOptions,
    private readonly onOutcome: (outcome: Outcome) => void,
  ) {
    // No SDK retries: every failure is counted once, as the edge answered it.
    this.openai = new OpenAI({
      baseURL: `${options.origin}/v1`,
      apiKey: options.apiKey,
      maxRetries: 0,
      timeout: 600_000,
      logLevel: 'off',
    });
    this.anthropic = new Anthropic({
      baseURL: options.origin,
      apiKey: options.apiKey,
      maxRetries: 0,
      timeout: 600_000,
      logLevel: 'off',
    });
    this.random = seededRandom(options.seed);
  }

  /** Runs `workers` closed-loop workers until `stop()`; resolves when all have finished their last request. */
  async run(workers: number): Promise<void> {
    await Promise.all(Array.from({ length: workers }, () => this.worker()));
  }

  /** Lets in-flight requests finish; no new ones start. */
  stop(): void {
    this.stopped = true;
  }

  /** Aborts every request still in flight (a hard deadline at the end). */
  abortAll(): void {
    for (const controller of this.controllers) controller.abort();
  }

  private draw(range: Range): number {
    return range.min + Math.floor(this.random() * (range.max - range.min + 1));
  }

  private async worker(): Promise<void> {
    while (!this.stopped) {
      const outcome = await this.one();
      // A client that cannot reach the edge, or is told to come back later, waits before its next
      // request, as the SDKs' own retries would (they are off here so each failure counts once).
      if (outcome.backOff === true) await sleep(BACK_OFF_MS);
    }
  }

  private async one(): Promise<Outcome> {
    const dialect = (['chat', 'responses', 'messages'] as const)[Math.floor(this.random() * 3)]!;
    const stream = this.random() < 0.5;
    const roll = this.random();
    const behaviour: Behaviour =
      roll < this.options.abortShare
        ? 'abort'
        : stream && roll < this.options.abortShare + this.options.slowReaderShare
          ? 'slow-reader'
          : 'normal';
    const prompt = `${PREFIXES[Math.floor(this.random() * PREFIXES.length)]} Question ${Math.floor(this.random() * 1e6)}: tell a long story.`;
    const maxTokens = this.draw(this.options.maxTokens);
    const pauseMs = behaviour === 'slow-reader' ? this.draw(this.options.pauseMs) : 0;
    const controller = new AbortController();
    this.controllers.add(controller);
    const abortTimer =
      behaviour === 'abort' ? setTimeout(() => controller.abort(), this.draw(this.options.abortAfterMs)) : undefined;
    const outcome: Outcome = { dialect, stream, behaviour, ok: false, startedAt: Date.now(), endedAt: 0 };
    try {
      const finished = await this.request(dialect, stream, prompt, maxTokens, pauseMs, controller.signal);
      outcome.ok = finished;
      if (!finished) outcome.errorClass = 'truncated';
    } catch (error) {
      outcome.errorClass = classify(error);
      if (backsOff(error)) outcome.backOff = true;
    } finally {
      // An abort the client made itself is the intended end, however the SDK reported it (an
      // error, or a stream iteration that just stops).
      if (behaviour === 'abort' && controller.signal.aborted && outcome.errorClass !== undefined) {
        outcome.ok = true;
        delete outcome.errorClass;
        delete outcome.backOff;
      }
      clearTimeout(abortTimer);
      this.controllers.delete(controller);
      outcome.endedAt = Date.now();
    }
    this.onOutcome(outcome);
    return outcome;
  }

  /** Sends one request; resolves true when the whole answer arrived (a finish reason / final event). */
  private async request(
    dialect: SoakDialect,
    stream: boolean,
    prompt: string,
    maxTokens: number,
    pauseMs: number,
    signal: AbortSignal,
  ): Promise<boolean> {
    const model = this.options.model;
    let paused = pauseMs === 0;
    const maybePause = async () => {
      if (paused) return;
      paused = true;
      await sleep(pauseMs); // the reader stops pulling: backpressure builds up towards the backend
    };
    switch (dialect) {
      case 'chat': {
        const messages = [{ role: 'user' as const, content: prompt }];
        if (!stream)
          return (
            (await this.openai.chat.completions.create({ model, messages, max_tokens: maxTokens }, { signal }))
              .choices[0]?.finish_reason != null
          );
        let finished = false;
        for await (const chunk of await this.openai.chat.completions.create(
          { model, messages, max_tokens: maxTokens, stream: true, stream_options: { include_usage: true } },
          { signal },
        )) {
          if (chunk.choices[0]?.finish_reason != null) finished = true;
          await maybePause();
        }
        return finished;
      }
      case 'responses': {
        if (!stream) {
          const response = await this.openai.responses.create(
            { model, input: prompt, max_output_tokens: maxTokens, store: false },
            { signal },
          );
          return response.status === 'completed' || response.status === 'incomplete';
        }
        let finished = false;
        for await (const event of await this.openai.responses.create(
          { model, input: prompt, max_output_tokens: maxTokens, store: false, stream: true },
          { signal },
        )) {
          if (event.type === 'response.completed' || event.type === 'response.incomplete') finished = true;
          if (event.type === 'response.failed' || event.type === 'error')
            throw new OpenAI.APIError(undefined, { type: event.type }, event.type, undefined);
          await maybePause();
        }
        return finished;
      }
      case 'messages': {
        const messages = [{ role: 'user' as const, content: prompt }];
        if (!stream)
          return (
            (await this.anthropic.messages.create({ model, max_tokens: maxTokens, messages }, { signal }))
              .stop_reason != null
          );
        let finished = false;
        for await (const event of await this.anthropic.messages.create(
          { model, max_tokens: maxTokens, messages, stream: true },
          { signal },
        )) {
          if (event.type === 'message_stop') finished = true;
          await maybePause();
        }
        return finished;
      }
    }
  }
}
