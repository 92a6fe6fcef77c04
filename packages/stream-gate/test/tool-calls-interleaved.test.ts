import fc from 'fast-check';
import type { StreamEvent } from '@iop/core';
import { toolCallFilters } from '../src/filters/tool-calls.js';
import { request, runGate, toolCallsOf, weatherTool } from './helpers';

const tools = [weatherTool];
const ARGUMENTS = ['{"city":"Paris","unit":"celsius"}', '{"city":"Oslo"}'];

/** Two parallel calls, each opening with empty arguments, fragments interleaved as `order` says. */
function interleaved(order: readonly boolean[], cuts: readonly number[]): StreamEvent[] {
  const queues: StreamEvent[][] = ARGUMENTS.map((text, index) => {
    const points = [...new Set(cuts.map((cut) => cut % text.length))].filter((p) => p > 0).sort((a, b) => a - b);
    const parts: StreamEvent[] = [
      { type: 'tool-call-delta', index, id: `call_${index}`, name: 'get_weather', argumentsDelta: '' },
    ];
    let last = 0;
    for (const point of [...points, text.length]) {
      parts.push({ type: 'tool-call-delta', index, argumentsDelta: text.slice(last, point) });
      last = point;
    }
    return parts;
  });
  const events: StreamEvent[] = [{ type: 'response-start', id: 'r', model: 'm', created: 1 }];
  let draw = 0;
  while (queues.some((queue) => queue.length > 0)) {
    const pick =
      queues[0]!.length === 0 ? 1 : queues[1]!.length === 0 ? 0 : order[draw++ % Math.max(order.length, 1)] ? 1 : 0;
    events.push(queues[pick]!.shift()!);
  }
  events.push({ type: 'finish', reason: 'tool_calls', raw: 'tool_calls' });
  return events;
}

describe('tool calls whose fragments interleave by index', () => {
  it('any interleaving passes on the first attempt with each call’s own arguments (no "{}" inserted)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.boolean(), { maxLength: 16 }),
        fc.array(fc.nat({ max: 40 }), { maxLength: 4 }),
        async (order, cuts) => {
          const { released, dispatcher } = await runGate({
            filters: toolCallFilters(),
            scripts: [{ events: interleaved(order, cuts) }],
            request: request({ tools }),
          });
          expect(dispatcher.attempts).toHaveLength(1);
          expect(toolCallsOf(released)).toEqual([
            { index: 0, name: 'get_weather', arguments: ARGUMENTS[0] },
            { index: 1, name: 'get_weather', arguments: ARGUMENTS[1] },
          ]);
        },
      ),
      { numRuns: 60 },
    );
  });

  it('a parameterless call still gets "{}", once, at the end of the turn', async () => {
    const events: StreamEvent[] = [
      { type: 'tool-call-delta', index: 0, id: 'call_0', name: 'get_time', argumentsDelta: '' },
      { type: 'tool-call-delta', index: 1, id: 'call_1', name: 'get_weather', argumentsDelta: '' },
      { type: 'tool-call-delta', index: 1, argumentsDelta: '{"city":"Rome"}' },
      { type: 'finish', reason: 'stop', raw: 'stop' },
    ];
    const { released } = await runGate({
      filters: toolCallFilters(),
      scripts: [{ events }],
      request: request({ tools: [weatherTool, { name: 'get_time', parameters: { type: 'object', properties: {} } }] }),
    });
    expect(toolCallsOf(released)).toEqual([
      { index: 0, name: 'get_time', arguments: '{}' },
      { index: 1, name: 'get_weather', arguments: '{"city":"Rome"}' },
    ]);
    expect(released.at(-1)).toMatchObject({ type: 'finish', reason: 'tool_calls' });
  });

  it('the output limit inside a call: one attempt, finish length, the arguments as generated', async () => {
    const events: StreamEvent[] = [
      { type: 'tool-call-delta', index: 0, id: 'call_0', name: 'get_weather', argumentsDelta: '' },
      { type: 'tool-call-delta', index: 0, argumentsDelta: '{"city":"Par' },
      { type: 'finish', reason: 'length', raw: 'length' },
    ];
    const { released, dispatcher } = await runGate({
      filters: toolCallFilters(),
      scripts: [{ events }],
      request: request({ tools }),
    });
    expect(dispatcher.attempts).toHaveLength(1);
    expect(toolCallsOf(released)).toEqual([{ index: 0, name: 'get_weather', arguments: '{"city":"Par' }]);
    expect(released.filter((event) => event.type === 'finish')).toEqual([
      { type: 'finish', reason: 'length', raw: 'length' },
    ]);
  });
});
