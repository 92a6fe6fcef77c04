/** The Responses stream encoder with JSON-line framing (Responses over WebSocket). */
import fc from 'fast-check';
import type { StreamEvent } from '@iop/core';
import { createResponsesLinesEncoder } from '../../src/openai-responses/stream-encode.js';
import { checkGrammar, contextFor, encode, start, usage, TOOLS } from './helpers.js';

describe('Responses stream encoder, JSON-line framing (Responses over WebSocket)', () => {
  /** Ids and completion times differ between two encoders: replaced before comparing. */
  const stable = (json: string) =>
    json
      .replace(/"(resp|msg|rs|fc|ctc|call)_[A-Za-z0-9]{24}"/g, '"$1_X"')
      .replace(/"completed_at":\d+/g, '"completed_at":0');

  const eventArbitrary: fc.Arbitrary<StreamEvent> = fc.oneof(
    fc.record({ type: fc.constant('text-delta' as const), text: fc.string() }),
    fc.record({ type: fc.constant('reasoning-delta' as const), text: fc.string({ minLength: 1 }) }),
    fc.record({
      type: fc.constant('tool-call-delta' as const),
      index: fc.integer({ min: 0, max: 2 }),
      id: fc.constantFrom('call_a', 'call_b'),
      name: fc.constant('get_weather'),
      argumentsDelta: fc.constantFrom('', '{"city"', ':"Paris"}'),
    }),
    fc.constant<StreamEvent>(usage),
  );
  const endArbitrary: fc.Arbitrary<StreamEvent[]> = fc.constantFrom(
    [{ type: 'finish', reason: 'stop', raw: 'stop' }],
    [{ type: 'finish', reason: 'length', raw: 'length' }],
    [{ type: 'error', code: 'upstream_error', message: 'backend failed' }],
    [],
  );

  it('gives exactly the SSE stream’s events, one JSON object per line, for any event sequence', () => {
    fc.assert(
      fc.property(fc.array(eventArbitrary, { maxLength: 12 }), endArbitrary, (middle, end) => {
        const events = [start, ...middle, ...end];
        const context = contextFor(TOOLS);
        const { sse } = encode(events, context);
        const lines = createResponsesLinesEncoder(context);
        let text = '';
        for (const event of events) text += lines.push(event);
        text += lines.end();
        expect(text.endsWith('\n')).toBe(true);
        const messages = text.slice(0, -1).split('\n');
        const frames = checkGrammar(sse);
        expect(messages.map(stable)).toEqual(frames.map((frame) => stable(JSON.stringify(frame.data))));
        for (const [index, message] of messages.entries())
          expect((JSON.parse(message) as { type: string }).type).toBe(frames[index]!.event);
        expect(lines.result()?.status).toBe(JSON.parse(messages.at(-1)!).response.status);
      }),
      { numRuns: 200 },
    );
  });
});
