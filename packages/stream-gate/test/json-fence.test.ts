import fc from 'fast-check';
import type { StreamEvent } from '@iop/core';
import { createFilters } from '../src/filters/registry.js';
import { request, runGate } from './helpers';

const filters = createFilters(['structured-output']);
const schema = {
  type: 'object',
  properties: { city: { type: 'string' } },
  required: ['city'],
  additionalProperties: false,
};

/** `text` as text deltas cut at `cuts`, then a stop finish. */
function answer(text: string, cuts: readonly number[] = []): StreamEvent[] {
  const points = [...new Set(cuts.map((cut) => cut % (text.length + 1)))].sort((a, b) => a - b);
  const events: StreamEvent[] = [{ type: 'response-start', id: 'r', model: 'm', created: 1 }];
  let last = 0;
  for (const point of [...points, text.length]) {
    if (point > last) events.push({ type: 'text-delta', text: text.slice(last, point) });
    last = point;
  }
  events.push({ type: 'finish', reason: 'stop', raw: 'stop' });
  return events;
}

const textOf = (events: readonly StreamEvent[]) =>
  events.map((event) => (event.type === 'text-delta' ? event.text : '')).join('');

describe('JSON mode: one value in a single Markdown code fence', () => {
  it.each([
    ['```json\n{"city":"Paris"}\n```', '{"city":"Paris"}'],
    ['\n  ```\n{"city":"Paris"}\n```\n', '{"city":"Paris"}'],
    ['```JSON\n{\n  "city": "Paris"\n}\n```', '{\n  "city": "Paris"\n}'],
  ])('%j is unwrapped, validated and answered on the first attempt, for any split', async (fenced, bare) => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.nat(), { maxLength: 6 }), async (cuts) => {
        const { released, dispatcher } = await runGate({
          filters,
          scripts: [{ events: answer(fenced, cuts) }],
          request: request({ responseFormat: { type: 'json_schema', name: 'w', schema } }),
        });
        expect(dispatcher.attempts).toHaveLength(1);
        expect(textOf(released)).toBe(bare);
      }),
      { numRuns: 40 },
    );
  });

  it('json_object too; a bare answer passes unchanged', async () => {
    const fenced = await runGate({
      filters,
      scripts: [{ events: answer('```json\n{"a":[1,2]}\n```') }],
      request: request({ responseFormat: { type: 'json_object' } }),
    });
    expect(textOf(fenced.released)).toBe('{"a":[1,2]}');
    const bare = await runGate({
      filters,
      scripts: [{ events: answer(' {"a":"```"}') }],
      request: request({ responseFormat: { type: 'json_object' } }),
    });
    expect(textOf(bare.released)).toBe(' {"a":"```"}');
    expect(bare.dispatcher.attempts).toHaveLength(1);
  });

  it('prose around the fence is not a single fenced value: retried as invalid', async () => {
    const scripts = [
      { events: answer('Here you go:\n```json\n{"city":"Paris"}\n```') },
      { events: answer('{"city":"Oslo"}') },
    ];
    const { released, dispatcher } = await runGate({
      filters,
      scripts,
      request: request({ responseFormat: { type: 'json_schema', name: 'w', schema } }),
    });
    expect(dispatcher.attempts).toHaveLength(2);
    expect(textOf(released)).toBe('{"city":"Oslo"}');
  });

  it('text responses are left alone', async () => {
    const { released } = await runGate({
      filters,
      scripts: [{ events: answer('```js\nx()\n```') }],
      request: request(),
    });
    expect(textOf(released)).toBe('```js\nx()\n```');
  });
});
