/**
 * Property: however an upstream interleaves the fragments of parallel tool calls (each call's
 * own fragments in order, its first fragment carrying id and name), the client stream is
 * well formed (indexes 0,1,2… in start order, no interleaving) and the SDK accumulates every
 * call with its exact input, in the order the calls first appeared.
 */
import fc from 'fast-check';
import type { StreamEvent } from '@iop/core';
import { encodeAll, parseSse, sdkFinalMessage } from './helpers';

interface Call {
  id: string;
  name: string;
  input: Record<string, unknown>;
  fragments: string[];
}

/** A tool call whose JSON arguments are cut at arbitrary points. */
const callArbitrary = (toolIndex: number): fc.Arbitrary<Call> =>
  fc
    .record({
      input: fc.dictionary(fc.stringMatching(/^[a-z_]{1,6}$/), fc.oneof(fc.string(), fc.integer(), fc.boolean()), {
        maxKeys: 4,
      }),
      cuts: fc.array(fc.nat(), { maxLength: 5 }),
    })
    .map(({ input, cuts }) => {
      const json = Object.keys(input).length === 0 ? '' : JSON.stringify(input);
      const points = [...new Set(cuts.map((cut) => cut % (json.length + 1)))].sort((a, b) => a - b);
      const fragments: string[] = [];
      let start = 0;
      for (const point of points) {
        fragments.push(json.slice(start, point));
        start = point;
      }
      fragments.push(json.slice(start));
      return { id: `call_${toolIndex}`, name: `tool_${toolIndex}`, input, fragments };
    });

const scenario = fc.integer({ min: 1, max: 4 }).chain((count) =>
  fc.record({
    calls: fc.tuple(...Array.from({ length: count }, (_, i) => callArbitrary(i))),
    order: fc.array(fc.nat(count - 1), { minLength: 0, maxLength: 40 }),
    leadingText: fc.boolean(),
  }),
);

/** Interleaves the calls' fragments following `order` (each call keeps its own order), then the rest. */
function interleave(calls: readonly Call[], order: readonly number[]): { events: StreamEvent[]; firstSeen: number[] } {
  const next = calls.map(() => 0);
  const events: StreamEvent[] = [];
  const firstSeen: number[] = [];
  const emit = (i: number): void => {
    const call = calls[i]!;
    const k = next[i]!;
    if (k >= call.fragments.length) return;
    next[i] = k + 1;
    if (k === 0) {
      firstSeen.push(i);
      events.push({
        type: 'tool-call-delta',
        index: i,
        id: call.id,
        name: call.name,
        argumentsDelta: call.fragments[0]!,
      });
    } else {
      events.push({ type: 'tool-call-delta', index: i, argumentsDelta: call.fragments[k]! });
    }
  };
  for (const i of order) emit(i);
  calls.forEach((call, i) => {
    while (next[i]! < call.fragments.length) emit(i);
  });
  return { events, firstSeen };
}

describe('AnthropicStreamEncoder with interleaved parallel tool calls', () => {
  it('is well formed and the SDK recovers every call exactly', async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async ({ calls, order, leadingText }) => {
        const { events, firstSeen } = interleave(calls, order);
        const all: StreamEvent[] = [
          { type: 'response-start', id: 'c', model: 'm', created: 1 },
          ...(leadingText ? [{ type: 'text-delta', text: 'ok' } as const] : []),
          ...events,
          { type: 'finish', reason: 'tool_calls', raw: 'tool_calls' },
          { type: 'usage', usage: { inputTokens: 10, outputTokens: 5 } },
        ];
        const text = encodeAll(all);
        let open: number | undefined;
        let nextIndex = 0;
        for (const event of parseSse(text)) {
          if (event.event === 'content_block_start') {
            expect(open).toBeUndefined();
            expect(event.data.index).toBe(nextIndex++);
            open = event.data.index as number;
          } else if (event.event === 'content_block_delta') {
            expect(event.data.index).toBe(open);
          } else if (event.event === 'content_block_stop') {
            expect(event.data.index).toBe(open);
            open = undefined;
          }
        }
        const message = await sdkFinalMessage(text);
        const tools = message.content.filter((block) => block.type === 'tool_use');
        expect(tools).toEqual(
          firstSeen.map((i) => ({ type: 'tool_use', id: calls[i]!.id, name: calls[i]!.name, input: calls[i]!.input })),
        );
        expect(message.stop_reason).toBe('tool_use');
      }),
      { numRuns: 100 },
    );
  });
});
