import fc from 'fast-check';
import type { StreamEvent } from '@iop/core';
import { reasoningExtraction } from '../src/filters/reasoning-extraction.js';
import { textToolCalls } from '../src/filters/text-tool-calls.js';
import { toolCallFilters } from '../src/filters/tool-calls.js';
import { fixture, reasoningOf, rechunk, request, runGate, textOf, timeTool, toolCallsOf, weatherTool } from './helpers';

const tools = [weatherTool, timeTool];

describe('reasoning extraction', () => {
  it('turns a leading <think> block split across chunks into reasoning', async () => {
    const { released } = await runGate({
      filters: [reasoningExtraction()],
      scripts: [{ events: fixture('think-in-content') }],
    });
    expect(reasoningOf(released)).toBe('The user greets me.');
    expect(textOf(released)).toBe('Hello! How can I help?');
    expect(released.findIndex((event) => event.type === 'reasoning-delta')).toBeLessThan(
      released.findIndex((event) => event.type === 'text-delta'),
    );
  });

  it('handles the close-tag-only form when the template opened the block', async () => {
    const { released } = await runGate({
      filters: [reasoningExtraction({ openTagInPrompt: true })],
      scripts: [{ events: fixture('think-close-only') }],
    });
    expect(reasoningOf(released)).toBe('Short question, short answer.\n');
    expect(textOf(released)).toBe('42');
  });

  it('leaves content alone when no block opens it, and a later <think> is text', async () => {
    const events: StreamEvent[] = [
      fixture('think-in-content')[0]!,
      { type: 'text-delta', text: 'Use the <think> tag' },
      { type: 'text-delta', text: ' like </think> this.' },
      { type: 'finish', reason: 'stop', raw: 'stop' },
    ];
    const { released } = await runGate({ filters: [reasoningExtraction()], scripts: [{ events }] });
    expect(textOf(released)).toBe('Use the <think> tag like </think> this.');
    expect(reasoningOf(released)).toBe('');
  });

  it('starts in text when reasoning is disabled, even with openTagInPrompt', async () => {
    const { released } = await runGate({
      filters: [reasoningExtraction({ openTagInPrompt: true })],
      scripts: [
        {
          events: fixture('think-close-only').filter(
            (event) => event.type !== 'text-delta' || !event.text.includes('</think>'),
          ),
        },
      ],
      request: request({ reasoning: { enabled: false } }),
    });
    expect(reasoningOf(released)).toBe('');
    expect(textOf(released)).toBe('Short question\n\n42');
  });
});

describe('text tool calls', () => {
  it.each([
    [
      'hermes-text-tool-call',
      ['hermes'],
      [
        { index: 0, name: 'get_weather', arguments: '{"city":"Paris"}' },
        { index: 1, name: 'get_time', arguments: '{}' },
      ],
    ],
    ['mistral-text-tool-call', ['mistral'], [{ index: 0, name: 'get_weather', arguments: '{"city":"Rome"}' }]],
    ['llama3-python-tag', ['llama3'], [{ index: 0, name: 'get_weather', arguments: '{"city":"Lima"}' }]],
  ] as const)('extracts %s into native calls', async (name, formats, calls) => {
    const { released } = await runGate({
      filters: [textToolCalls({ formats: [...formats] }), ...toolCallFilters()],
      scripts: [{ events: fixture(name) }],
      request: request({ tools }),
    });
    expect(textOf(released)).toBe('');
    expect(toolCallsOf(released)).toEqual(calls);
    for (const event of released)
      if (event.type === 'tool-call-delta') expect(event.id).toMatch(/^call_[A-Za-z0-9]{24}$/);
    expect(released.find((event) => event.type === 'finish')).toEqual({
      type: 'finish',
      reason: 'tool_calls',
      raw: 'stop',
    });
  });

  it('rejects an unreadable call and retries with a patch', async () => {
    const broken: StreamEvent[] = [
      fixture('hermes-text-tool-call')[0]!,
      { type: 'text-delta', text: '<tool_call>{"name": "get_weather", "arguments": {"city": }</tool_call>' },
      { type: 'finish', reason: 'stop', raw: 'stop' },
    ];
    const { released, dispatcher } = await runGate({
      filters: [textToolCalls()],
      scripts: [{ events: broken }, { events: fixture('hermes-text-tool-call') }],
      request: request({ tools }),
    });
    expect(dispatcher.attempts).toHaveLength(2);
    expect(JSON.stringify(dispatcher.attempts[1]!.request.messages.at(-1))).toMatch(/could not be read/);
    expect(toolCallsOf(released)).toHaveLength(2);
  });

  it('keeps prose around calls and text that only looks like a marker', async () => {
    const events: StreamEvent[] = [
      fixture('hermes-text-tool-call')[0]!,
      { type: 'text-delta', text: 'a < b and <tool' },
      { type: 'text-delta', text: 'box> stays. ' },
      { type: 'text-delta', text: '<tool_call>{"name":"get_time","arguments":{}}</tool_call>\nDone.' },
      { type: 'finish', reason: 'stop', raw: 'stop' },
    ];
    const { released } = await runGate({
      filters: [textToolCalls()],
      scripts: [{ events }],
      request: request({ tools }),
    });
    expect(textOf(released)).toBe('a < b and <toolbox> stays.Done.');
    expect(toolCallsOf(released)).toEqual([{ index: 0, name: 'get_time', arguments: '{}' }]);
  });
});

describe('chunking invariance (property)', () => {
  const sources: [string, StreamEvent[]][] = [
    ['think-in-content', fixture('think-in-content')],
    ['hermes-text-tool-call', fixture('hermes-text-tool-call')],
    ['tool-call-parallel-empty-args', fixture('tool-call-parallel-empty-args')],
    [
      'think then hermes call and prose',
      [
        fixture('think-in-content')[0]!,
        {
          type: 'text-delta',
          text: '<think>plan: call get_time</think>\n\nLet me check the time. \n<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>\n',
        },
        { type: 'text-delta', text: '\nA < b, <tool and [TOOL] are text.  \n' },
        { type: 'finish', reason: 'stop', raw: 'stop' },
      ],
    ],
  ];

  it.each(['passthrough', 'evidence-tail', 'buffered'] as const)(
    'any split of deltas yields the same answer (%s)',
    async (policy) => {
      const filters = () => [
        reasoningExtraction(),
        textToolCalls({ formats: ['hermes', 'mistral'] }),
        ...toolCallFilters(),
      ];
      for (const [, events] of sources) {
        const reference = (
          await runGate({ filters: filters(), scripts: [{ events }], request: request({ tools }), policy })
        ).released;
        await fc.assert(
          fc.asyncProperty(
            fc.array(fc.double({ min: 0, max: 0.999, noNaN: true }), { maxLength: 12 }),
            async (cuts) => {
              const { released } = await runGate({
                filters: filters(),
                scripts: [{ events: rechunk(events, cuts) }],
                request: request({ tools }),
                policy,
              });
              expect(textOf(released)).toBe(textOf(reference));
              expect(reasoningOf(released)).toBe(reasoningOf(reference));
              expect(toolCallsOf(released).map(({ name, arguments: args }) => [name, args])).toEqual(
                toolCallsOf(reference).map(({ name, arguments: args }) => [name, args]),
              );
              expect(released.at(-1)!.type).toBe(reference.at(-1)!.type);
            },
          ),
          { numRuns: 60 },
        );
      }
    },
  );
});
