/** Test helpers: recorded fixtures, a scripted fake Dispatcher (the gate's I/O boundary), a manual clock. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { InferenceRequest, StreamEvent } from '@iop/core';
import type { AttemptRequest, DispatchedAttempt, Dispatcher } from '../src/attempt-request.js';
import type { Clock, ReleasePolicy, GateBudgets } from '../src/config.js';
import type { GateFilter } from '../src/filter.js';
import type { GateSink } from '../src/sink.js';
import type { RunOptions } from '../src/stream-gate.js';
import { createStreamGate } from '../src/stream-gate.js';

export function fixture(name: string): StreamEvent[] {
  return readFileSync(join(__dirname, '__fixtures__', `${name}.jsonl`), 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as StreamEvent);
}

export const weatherTool = {
  name: 'get_weather',
  description: 'Current weather',
  parameters: {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    type: 'object',
    properties: {
      city: { type: 'string', minLength: 1 },
      unit: { anyOf: [{ const: 'celsius' }, { const: 'fahrenheit' }] },
    },
    required: ['city'],
    additionalProperties: false,
  },
};

export const timeTool = { name: 'get_time', parameters: { type: 'object', properties: {} } };

export function request(extra: Partial<InferenceRequest> = {}): InferenceRequest {
  return {
    model: 'qwen3-8b',
    messages: [{ role: 'user', content: [{ type: 'text', text: 'Weather in Paris?' }] }],
    stream: true,
    ...extra,
  };
}

/** One scripted attempt: events to yield, then optionally a throw (a connection failure). */
export interface Script {
  events: StreamEvent[];
  provider?: string;
  throwAfter?: boolean;
  /** Wait for this before each event (lets a test advance a clock or abort). */
  delay?: () => Promise<void>;
  /** The dispatcher refused this attempt (no provider reached); `events` carry its error. */
  refused?: boolean;
}

export class FakeDispatcher implements Dispatcher {
  readonly attempts: AttemptRequest[] = [];
  constructor(private readonly next: (attempt: AttemptRequest) => Script) {}

  dispatch(attempt: AttemptRequest, signal: AbortSignal): DispatchedAttempt {
    this.attempts.push(attempt);
    const script = this.next(attempt);
    async function* events(): AsyncGenerator<StreamEvent> {
      for (const event of script.events) {
        if (script.delay) await script.delay();
        if (signal.aborted) throw new Error('aborted');
        yield event;
      }
      if (script.throwAfter) throw new Error('socket hang up');
    }
    return { events: events(), provider: script.provider, refused: script.refused === true };
  }
}

export async function collect(iterable: AsyncIterable<StreamEvent>): Promise<StreamEvent[]> {
  const out: StreamEvent[] = [];
  for await (const event of iterable) out.push(event);
  return out;
}

export interface Recorded {
  verdicts: Parameters<GateSink['verdict']>[0][];
  attempts: Parameters<GateSink['attempt']>[0][];
  warnings: Parameters<GateSink['warning']>[0][];
}

export function recordingSink(): GateSink & Recorded {
  const recorded: Recorded = { verdicts: [], attempts: [], warnings: [] };
  return {
    ...recorded,
    verdict: (report) => recorded.verdicts.push(report),
    attempt: (report) => recorded.attempts.push(report),
    warning: (report) => recorded.warnings.push(report),
  };
}

/** Runs one request whose every attempt replays `scripts[attempt-1]` (the last one repeats). */
export async function runGate(options: {
  filters: GateFilter[];
  scripts: Script[] | ((attempt: AttemptRequest) => Script);
  request?: InferenceRequest;
  policy?: ReleasePolicy;
  budgets?: Partial<GateBudgets>;
  run?: Partial<RunOptions>;
  clock?: Clock;
}): Promise<{ released: StreamEvent[]; dispatcher: FakeDispatcher; sink: GateSink & Recorded; committed: boolean }> {
  const sink = recordingSink();
  const gate = createStreamGate({
    filters: options.filters,
    policy: options.policy ?? 'evidence-tail',
    budgets: options.budgets ?? {},
    sink,
    ...(options.clock ? { clock: options.clock } : {}),
  });
  const scripts = options.scripts;
  const dispatcher = new FakeDispatcher(
    typeof scripts === 'function' ? scripts : (attempt) => scripts[Math.min(attempt.attempt, scripts.length) - 1]!,
  );
  const run = gate.run(options.request ?? request(), dispatcher, { requestId: 'req_test', ...options.run });
  const released = await collect(run);
  return { released, dispatcher, sink, committed: run.committed };
}

export function textOf(events: readonly StreamEvent[]): string {
  return events.map((event) => (event.type === 'text-delta' ? event.text : '')).join('');
}

export function reasoningOf(events: readonly StreamEvent[]): string {
  return events.map((event) => (event.type === 'reasoning-delta' ? event.text : '')).join('');
}

/** Final tool calls by index: name and joined arguments. */
export function toolCallsOf(events: readonly StreamEvent[]): { index: number; name: string; arguments: string }[] {
  const calls = new Map<number, { index: number; name: string; arguments: string }>();
  for (const event of events) {
    if (event.type !== 'tool-call-delta') continue;
    const call = calls.get(event.index) ?? { index: event.index, name: '', arguments: '' };
    if (event.name !== undefined) call.name = event.name;
    call.arguments += event.argumentsDelta;
    calls.set(event.index, call);
  }
  return [...calls.values()].sort((a, b) => a.index - b.index);
}

/** Splits every text delta and argument fragment at the given cut points (fractions in [0,1)). */
export function rechunk(events: readonly StreamEvent[], cuts: readonly number[]): StreamEvent[] {
  const out: StreamEvent[] = [];
  let cursor = 0;
  const nextCuts = (length: number): number[] => {
    const count = cuts.length === 0 ? 0 : 1 + (cursor++ % 3);
    const points = new Set<number>();
    for (let i = 0; i < count; i++) points.add(Math.floor(cuts[(cursor + i) % cuts.length]! * length));
    return [...points].filter((p) => p > 0 && p < length).sort((a, b) => a - b);
  };
  for (const event of events) {
    if (event.type === 'text-delta') {
      let last = 0;
      for (const point of nextCuts(event.text.length)) {
        out.push({ type: 'text-delta', text: event.text.slice(last, point) });
        last = point;
      }
      out.push({ type: 'text-delta', text: event.text.slice(last) });
    } else if (event.type === 'tool-call-delta') {
      let last = 0;
      let first = true;
      for (const point of [...nextCuts(event.argumentsDelta.length), event.argumentsDelta.length]) {
        const piece = event.argumentsDelta.slice(last, point);
        out.push(
          first
            ? { ...event, argumentsDelta: piece }
            : { type: 'tool-call-delta', index: event.index, argumentsDelta: piece },
        );
        first = false;
        last = point;
      }
    } else {
      out.push(event);
    }
  }
  return out;
}

/** A clock whose time moves only when the test says. */
export class ManualClock implements Clock {
  time = 0;
  private timers: { at: number; callback: () => void; live: boolean }[] = [];
  now(): number {
    return this.time;
  }
  setTimer(callback: () => void, ms: number): () => void {
    const timer = { at: this.time + ms, callback, live: true };
    this.timers.push(timer);
    return () => {
      timer.live = false;
    };
  }
  advance(ms: number): void {
    this.time += ms;
    for (const timer of this.timers) {
      if (timer.live && timer.at <= this.time) {
        timer.live = false;
        timer.callback();
      }
    }
  }
}
