import fc from 'fast-check';
import type { StreamEvent } from '@iop/core';
import { createStreamGate } from '../src/stream-gate.js';
import { degenerationGuard } from '../src/filters/degeneration.js';
import { emptyOutputGuard } from '../src/filters/empty-output.js';
import { toolCallFilters } from '../src/filters/tool-calls.js';
import type { AttemptRequest } from '../src/attempt-request.js';
import { fixture, ManualClock, request, runGate, textOf, toolCallsOf, weatherTool } from './helpers';

const start = fixture('tool-call-valid')[0]!;
const finish: StreamEvent = { type: 'finish', reason: 'stop', raw: 'stop' };
const text = (value: string): StreamEvent => ({ type: 'text-delta', text: value });
const answer = [
  start,
  text('The weather '),
  text('in Paris '),
  text('is sunny.'),
  finish,
  { type: 'usage', usage: { inputTokens: 10, outputTokens: 6 } } as StreamEvent,
];

describe('recovery', () => {
  it('with invalid tool arguments on 30% of attempts, releases only schema-valid calls or a clean error', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { minLength: 3, maxLength: 3 }),
        async (draws) => {
          const { released, dispatcher } = await runGate({
            filters: toolCallFilters(),
            request: request({ tools: [weatherTool] }),
            scripts: (attempt) => ({
              events: fixture(draws[attempt.attempt - 1]! < 0.3 ? 'tool-call-schema-invalid' : 'tool-call-valid'),
            }),
          });
          const firstValid = draws.findIndex((draw) => draw >= 0.3);
          if (firstValid === -1) {
            expect(released).toEqual([expect.objectContaining({ type: 'error', code: 'upstream_error' })]);
            expect(dispatcher.attempts).toHaveLength(3);
          } else {
            expect(dispatcher.attempts).toHaveLength(firstValid + 1);
            expect(toolCallsOf(released)).toEqual([
              { index: 0, name: 'get_weather', arguments: '{"city": "Paris", "unit": "celsius"}' },
            ]);
            expect(released.filter((event) => event.type === 'response-start')).toHaveLength(1);
            expect(released.at(-2)).toMatchObject({ type: 'finish' });
          }
        },
      ),
      { numRuns: 40 },
    );
  });

  it('retries a stream cut before commit transparently, on another provider, with nothing duplicated', async () => {
    const { released, dispatcher, sink } = await runGate({
      filters: toolCallFilters(),
      policy: 'buffered',
      scripts: [
        { events: answer.slice(0, 3), provider: 'agent-a', throwAfter: true },
        { events: answer, provider: 'agent-b' },
      ],
    });
    expect(released).toEqual(answer);
    expect(dispatcher.attempts.map((attempt) => attempt.avoidProviders)).toEqual([[], ['agent-a']]);
    expect(dispatcher.attempts.map((attempt) => attempt.idempotencyKey)).toEqual(['req_test:1', 'req_test:2']);
    expect(sink.attempts.map((report) => [report.outcome, report.provider, report.wasted])).toEqual([
      ['retried', 'agent-a', true],
      ['answered', 'agent-b', false],
    ]);
  });

  it('retries a retryable upstream error event before commit, and passes a non-retryable one through', async () => {
    const overloaded: StreamEvent = { type: 'error', code: 'no_capacity', message: 'overloaded' };
    const retried = await runGate({ filters: [], scripts: [{ events: [start, overloaded] }, { events: answer }] });
    expect(retried.released).toEqual(answer);
    const tooLong: StreamEvent = { type: 'error', code: 'context_length_exceeded', message: 'prompt too long' };
    const failed = await runGate({ filters: [], scripts: [{ events: [start, tooLong] }, { events: answer }] });
    expect(failed.released).toEqual([tooLong]);
    expect(failed.dispatcher.attempts).toHaveLength(1);
  });

  it('ends a stream cut after commit with an error event, never a finish', async () => {
    const { released, dispatcher, committed } = await runGate({
      filters: [],
      policy: 'evidence-tail',
      scripts: [{ events: answer.slice(0, 3), throwAfter: true }, { events: answer }],
    });
    expect(committed).toBe(true);
    expect(dispatcher.attempts).toHaveLength(1);
    expect(released.map((event) => event.type)).toEqual(['response-start', 'text-delta', 'text-delta', 'error']);
    expect(released.at(-1)).toMatchObject({ code: 'upstream_error', message: expect.stringMatching(/socket hang up/) });
  });

  it('continues a stream cut after commit with the released text as prefill, where the backend allows it', async () => {
    const { released, dispatcher, sink } = await runGate({
      filters: [emptyOutputGuard()],
      scripts: (attempt: AttemptRequest) =>
        attempt.attempt === 1
          ? { events: answer.slice(0, 3), throwAfter: true }
          : {
              events: [
                { ...start, id: 'chatcmpl-2' },
                text('is sunny.'),
                finish,
                { type: 'usage', usage: { inputTokens: 14, outputTokens: 3 } },
              ],
            },
      run: { canContinue: true },
    });
    const continuation = dispatcher.attempts[1]!;
    expect(continuation.prefill).toBe('The weather in Paris ');
    expect(continuation.request.messages.at(-1)).toEqual({
      role: 'assistant',
      content: [{ type: 'text', text: 'The weather in Paris ' }],
    });
    expect(released.filter((event) => event.type === 'response-start')).toEqual([start]);
    expect(textOf(released)).toBe('The weather in Paris is sunny.');
    expect(released.at(-2)).toEqual(finish);
    expect(released.at(-1)).toEqual({ type: 'usage', usage: { inputTokens: 14, outputTokens: 3 } });
    expect(sink.attempts.map((report) => report.outcome)).toEqual(['continued', 'answered']);
  });

  it('released text is always a prefix of the final answer, wherever the stream is cut (property)', async () => {
    const words = 'Paris is sunny today with a light breeze from the west and no rain expected'
      .split(' ')
      .map((word) => `${word} `);
    const full = words.join('');
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: words.length - 1 }), fc.boolean(), async (cut, canContinue) => {
        const { released } = await runGate({
          filters: [emptyOutputGuard()],
          run: { canContinue },
          scripts: (attempt) => {
            if (attempt.attempt === 1) return { events: [start, ...words.slice(0, cut).map(text)], throwAfter: true };
            const already = attempt.prefill ?? '';
            return { events: [start, text(full.slice(already.length)), finish] };
          },
        });
        const releasedText = textOf(released);
        expect(full.startsWith(releasedText)).toBe(true);
        expect(released.filter((event) => event.type === 'response-start')).toHaveLength(1);
        if (canContinue) expect(released.at(-1)).toEqual(finish);
        else expect(released.at(-1)).toMatchObject({ type: 'error' });
        if (canContinue) expect(releasedText).toBe(full);
      }),
      { numRuns: 50 },
    );
  });

  it('never continues a degenerate loop after commit', async () => {
    const { released, dispatcher } = await runGate({
      filters: [degenerationGuard({ minRepeatedTokens: 64 })],
      scripts: [{ events: fixture('degenerate-loop') }],
      run: { canContinue: true },
    });
    expect(dispatcher.attempts).toHaveLength(1);
    expect(released.at(-1)).toMatchObject({
      type: 'error',
      message: expect.stringMatching(/degeneration: output repeats a 3-token unit/),
    });
    expect(textOf(released).startsWith('Here is the answer. I am sorry.')).toBe(true);
  });

  it('enforces the attempt budget', async () => {
    const { released, dispatcher } = await runGate({
      filters: [emptyOutputGuard()],
      budgets: { maxAttempts: 2 },
      scripts: [{ events: fixture('empty-output') }],
    });
    expect(dispatcher.attempts).toHaveLength(2);
    expect(released).toEqual([
      {
        type: 'error',
        code: 'upstream_error',
        message: 'model output rejected by empty-output: empty output (finish reason stop) (after 2 attempts)',
      },
    ]);
  });

  it('a retry the dispatcher refuses ends the request at once and is not counted in the message', async () => {
    const upstream503: StreamEvent = { type: 'error', code: 'no_capacity', message: 'upstream failed: 503 busy' };
    const { released, dispatcher, sink } = await runGate({
      filters: [],
      budgets: { maxAttempts: 3 },
      scripts: [
        { events: [upstream503], provider: 'p1' },
        { events: [upstream503], refused: true },
      ],
    });
    expect(dispatcher.attempts).toHaveLength(2);
    expect(released).toEqual([upstream503]); // one attempt reached a provider: no "(after N attempts)"
    expect(sink.attempts.map((report) => report.outcome)).toEqual(['retried', 'failed']);
  });

  it('enforces the time budget: a stalled attempt ends with a timeout error', async () => {
    const clock = new ManualClock();
    let step = 0;
    const { released, dispatcher } = await runGate({
      filters: [],
      clock,
      budgets: { maxTotalMs: 1000 },
      policy: 'buffered',
      scripts: [
        {
          events: answer,
          delay: async () => {
            if (++step === 3) clock.advance(1500);
          },
        },
      ],
    });
    expect(dispatcher.attempts).toHaveLength(1);
    expect(released).toEqual([
      { type: 'error', code: 'timeout', message: 'the request exceeded its time budget of 1000 ms' },
    ]);
  });

  it('keeps held bytes bounded under a 10 MB degenerate stream', async () => {
    const chunk = 'la '.repeat(1000); // 3000 bytes
    let yielded = 0;
    async function* flood(): AsyncGenerator<StreamEvent> {
      yield start;
      for (let sent = 0; sent < 10 * 1024 * 1024; sent += chunk.length) {
        yielded += chunk.length;
        yield text(chunk);
      }
      yield finish;
    }
    const gate = createStreamGate({
      filters: [],
      policy: 'buffered',
      budgets: { maxHeldBytes: 1024 * 1024, maxAttempts: 1 },
    });
    const out: StreamEvent[] = [];
    for await (const event of gate.run(
      request(),
      { dispatch: () => ({ events: flood() }) },
      { requestId: 'req_flood' },
    ))
      out.push(event);
    expect(out).toEqual([
      expect.objectContaining({
        type: 'error',
        code: 'upstream_error',
        message: expect.stringMatching(/held-bytes budget/),
      }),
    ]);
    expect(yielded).toBeLessThan(1024 * 1024 + 2 * chunk.length);
  });

  it('closes the upstream and aborts the attempt when the consumer stops reading', async () => {
    let closed = false;
    let signalSeen: AbortSignal | undefined;
    async function* upstream(): AsyncGenerator<StreamEvent> {
      try {
        for (const event of answer) yield event;
      } finally {
        closed = true;
      }
    }
    const gate = createStreamGate({ filters: [], policy: 'passthrough' });
    const dispatcher = {
      dispatch: (_attempt: AttemptRequest, signal: AbortSignal) => ((signalSeen = signal), { events: upstream() }),
    };
    for await (const event of gate.run(request(), dispatcher, { requestId: 'req_stop' })) {
      if (event.type === 'text-delta') break;
    }
    await new Promise((resolve) => setImmediate(resolve));
    expect(closed).toBe(true);
    expect(signalSeen?.aborted).toBe(true);
  });

  it('ends quietly when the client aborts', async () => {
    const controller = new AbortController();
    let textsSeen = 0;
    const { released, sink } = await runGate({
      filters: [],
      policy: 'passthrough',
      scripts: [{ events: answer, delay: async () => (textsSeen++ === 2 ? controller.abort() : undefined) }],
      run: { signal: controller.signal },
    });
    expect(released.some((event) => event.type === 'finish' || event.type === 'error')).toBe(false);
    expect(sink.attempts.map((report) => report.outcome)).toEqual(['aborted']);
  });
});
