import type { StreamEvent } from '@iop/core';
import { eventBytes } from '../src/release-queue';
import { fixture, request, runGate } from './helpers';

const start = fixture('tool-call-valid')[0]!;
const finish: StreamEvent = { type: 'finish', reason: 'stop', raw: 'stop' };
const text = (value: string): StreamEvent => ({ type: 'text-delta', text: value });
const parts = ['The weather ', 'in Paris ', 'is sunny, ünïcödé.'];
const answer = [start, ...parts.map(text), finish];
const bytes = (events: readonly StreamEvent[]) => events.reduce((sum, event) => sum + eventBytes(event), 0);

describe('peak held bytes in the attempt report', () => {
  it('buffered holds the whole attempt: the peak is every queued event, in UTF-8 bytes', async () => {
    const { sink } = await runGate({ filters: [], policy: 'buffered', scripts: [{ events: answer }] });
    expect(sink.attempts).toHaveLength(1);
    expect(sink.attempts[0]!.peakHeldBytes).toBe(bytes(answer));
    // 5 events at 64 bytes of overhead, plus the text's UTF-8 length (ü, ï, ö, é take 2 bytes each)
    expect(sink.attempts[0]!.peakHeldBytes).toBe(5 * 64 + Buffer.byteLength(parts.join('')));
  });

  it('passthrough and evidence-tail hold the start until the first text, then one event at a time', async () => {
    for (const policy of ['passthrough', 'evidence-tail'] as const) {
      const { sink, released } = await runGate({ filters: [], policy, scripts: [{ events: answer }] });
      expect(released).toEqual(answer);
      expect(sink.attempts[0]!.peakHeldBytes).toBe(
        Math.max(bytes([start, text(parts[0]!)]), ...parts.slice(1).map((part) => bytes([text(part)]))),
      );
    }
  });

  it('reports the peak of each attempt separately when an attempt is retried', async () => {
    const long = [start, text('x'.repeat(1000)), text('y'), finish];
    const { sink } = await runGate({
      filters: [],
      policy: 'buffered',
      scripts: [{ events: long.slice(0, 3), throwAfter: true }, { events: answer }],
    });
    expect(sink.attempts.map((report) => [report.outcome, report.peakHeldBytes])).toEqual([
      ['retried', bytes(long.slice(0, 3))],
      ['answered', bytes(answer)],
    ]);
  });
});

describe('a non-stream request is released only whole', () => {
  it('a cut after text is before commit for a non-stream client: retried, and the answer is complete', async () => {
    const { released, dispatcher, sink } = await runGate({
      filters: [],
      policy: 'passthrough',
      request: request({ stream: false }),
      scripts: [{ events: answer.slice(0, 3), throwAfter: true }, { events: answer }],
    });
    expect(released).toEqual(answer);
    expect(dispatcher.attempts).toHaveLength(2);
    expect(sink.attempts.map((report) => [report.outcome, report.committed])).toEqual([
      ['retried', false],
      ['answered', true],
    ]);
  });

  it('the same cut on a stream request, once text was released, ends with an error event', async () => {
    const { released, dispatcher } = await runGate({
      filters: [],
      policy: 'passthrough',
      scripts: [{ events: answer.slice(0, 3), throwAfter: true }, { events: answer }],
    });
    expect(released.slice(0, 3)).toEqual(answer.slice(0, 3));
    expect(released.at(-1)).toMatchObject({ type: 'error', code: 'upstream_error' });
    expect(released.some((event) => event.type === 'finish')).toBe(false);
    expect(dispatcher.attempts).toHaveLength(1);
  });
});
