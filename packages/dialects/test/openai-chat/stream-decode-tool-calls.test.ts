import fc from 'fast-check';
import type { StreamEvent } from '@iop/core';
import { decodeSlices, frameFixture, splitAt } from './helpers.js';

/** The calls the events describe: hub index → id, name and the joined arguments. */
function calls(
  events: readonly StreamEvent[],
): Array<{ index: number; id: string | undefined; name: string | undefined; arguments: string }> {
  const byIndex = new Map<
    number,
    { index: number; id: string | undefined; name: string | undefined; arguments: string }
  >();
  for (const event of events) {
    if (event.type !== 'tool-call-delta') continue;
    const call = byIndex.get(event.index) ?? { index: event.index, id: undefined, name: undefined, arguments: '' };
    call.id ??= event.id;
    call.name ??= event.name;
    call.arguments += event.argumentsDelta;
    byIndex.set(event.index, call);
  }
  return [...byIndex.values()].sort((a, b) => a.index - b.index);
}

describe('tool calls in upstream chat streams', () => {
  it('interleaved fragments of parallel calls are kept apart by index', () => {
    expect(calls(decodeSlices([frameFixture('interleaved-tool-calls')]))).toEqual([
      { index: 0, id: 'call_a1', name: 'get_weather', arguments: '{"city": "Paris"}' },
      { index: 1, id: 'call_b2', name: 'get_weather', arguments: '{"city": "Oslo"}' },
    ]);
  });

  it('Ollama: two calls at index 0 with different ids are two calls (ollama/ollama#15457)', () => {
    const events = decodeSlices([frameFixture('ollama-tool-calls-same-index')]);
    expect(calls(events)).toEqual([
      {
        index: 0,
        id: 'call_lyywui55',
        name: 'file_write',
        arguments: '{"content":"print(\\"hello\\")","filePath":"hello.py"}',
      },
      {
        index: 1,
        id: 'call_0scw2dos',
        name: 'file_write',
        arguments: '{"content":"print(\\"world\\")","filePath":"world.py"}',
      },
    ]);
    expect(events.at(-1)).toEqual({ type: 'finish', reason: 'tool_calls', raw: 'tool_calls' });
  });

  it('arguments sent as a JSON object are serialized', () => {
    const [call] = calls(decodeSlices([frameFixture('arguments-object')]));
    expect(JSON.parse(call!.arguments)).toEqual({ city: 'Paris', days: 2 });
  });

  it('the output limit inside a call: finish length with the arguments as generated', () => {
    const events = decodeSlices([frameFixture('vllm-length-inside-tool-call')]);
    expect(calls(events)).toEqual([
      { index: 0, id: 'chatcmpl-tool-77', name: 'write_file', arguments: '{"path": "a.txt", "content": "Once upon' },
    ]);
    expect(events.filter((event) => event.type === 'finish')).toEqual([
      { type: 'finish', reason: 'length', raw: 'length' },
    ]);
  });

  it('a repeated id at the same index stays one call', () => {
    const chunk = (fragment: unknown, finish: string | null = null) =>
      `data: ${JSON.stringify({ id: 'c', choices: [{ index: 0, delta: { tool_calls: [fragment] }, finish_reason: finish }] })}\n\n`;
    const body =
      chunk({ index: 0, id: 'call_1', function: { name: 'f', arguments: '{"a":' } }) +
      chunk({ index: 0, id: 'call_1', function: { arguments: '1}' } }, 'tool_calls');
    expect(calls(decodeSlices([new TextEncoder().encode(body)]))).toEqual([
      { index: 0, id: 'call_1', name: 'f', arguments: '{"a":1}' },
    ]);
  });

  it('any interleaving of two calls’ fragments and any split of the body gives the same calls', () => {
    const argumentsOf = ['{"city": "Paris", "unit": "celsius"}', '{"city": "Oslo"}'];
    fc.assert(
      fc.property(
        fc.array(fc.nat({ max: 30 }), { maxLength: 4 }),
        fc.array(fc.nat({ max: 30 }), { maxLength: 4 }),
        fc.array(fc.boolean(), { minLength: 12, maxLength: 12 }),
        fc.array(fc.nat(), { maxLength: 12 }),
        (cutsA, cutsB, order, byteCuts) => {
          const fragments = argumentsOf.map((text, i) => {
            const points = [...new Set((i === 0 ? cutsA : cutsB).map((cut) => cut % text.length))].sort(
              (x, y) => x - y,
            );
            const parts: string[] = [];
            let last = 0;
            for (const point of points) {
              parts.push(text.slice(last, point));
              last = point;
            }
            parts.push(text.slice(last));
            return parts;
          });
          // Each call opens with empty arguments, then its fragments; the order between calls is drawn.
          const queues = fragments.map((parts, i) => [
            { index: i, id: `call_${i}`, type: 'function', function: { name: 'get_weather', arguments: '' } },
            ...parts.map((part) => ({ index: i, function: { arguments: part } })),
          ]);
          let body = '';
          let draw = 0;
          while (queues.some((queue) => queue.length > 0)) {
            const pick =
              queues[0]!.length === 0 ? 1 : queues[1]!.length === 0 ? 0 : order[draw++ % order.length] ? 1 : 0;
            body += `data: ${JSON.stringify({ id: 'c', choices: [{ index: 0, delta: { tool_calls: [queues[pick]!.shift()] }, finish_reason: null }] })}\n\n`;
          }
          body += `data: ${JSON.stringify({ id: 'c', choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] })}\n\ndata: [DONE]\n\n`;
          const decoded = calls(decodeSlices(splitAt(new TextEncoder().encode(body), byteCuts)));
          expect(decoded.map((call) => [call.id, call.arguments])).toEqual([
            ['call_0', argumentsOf[0]],
            ['call_1', argumentsOf[1]],
          ]);
        },
      ),
    );
  });
});
