import fc from 'fast-check';
import type { StreamEvent, ToolChoice } from '@iop/core';
import { toolCallFilters } from '../src/filters/tool-calls.js';
import { toolChoiceValidator } from '../src/filters/tool-choice.js';
import type { EventValidator } from '../src/filter.js';
import { rechunk, request, runGate, textOf, timeTool, toolCallsOf, weatherTool } from './helpers';

const tools = [weatherTool, timeTool];
const start: StreamEvent = { type: 'response-start', id: 'r', model: 'm', created: 1 };
const prose: StreamEvent[] = [
  start,
  { type: 'reasoning-delta', text: 'The user wants weather.' },
  { type: 'text-delta', text: 'I think it is sunny in Paris today.' },
  { type: 'finish', reason: 'stop', raw: 'stop' },
];
const call = (name: string): StreamEvent[] => [
  start,
  { type: 'text-delta', text: 'Let me check.' },
  { type: 'tool-call-delta', index: 0, id: 'call_1', name, argumentsDelta: '' },
  { type: 'tool-call-delta', index: 0, argumentsDelta: name === 'get_weather' ? '{"city":"Paris"}' : '{}' },
  { type: 'finish', reason: 'tool_calls', raw: 'tool_calls' },
];

/** The final verdict of one validator instance over a whole event sequence (hold at the end counts as pass). */
function verdictOf(choice: ToolChoice | undefined, events: readonly StreamEvent[]): string {
  const validator: EventValidator = toolChoiceValidator().create({
    request: request({ tools, ...(choice === undefined ? {} : { toolChoice: choice }) }),
    attempt: 1,
    continuation: undefined,
    warn: () => undefined,
  });
  for (const event of events) {
    if (event.type === 'response-start') continue;
    const verdict = validator.check(event);
    if (typeof verdict === 'object') return `reject: ${verdict.reason}`;
  }
  return 'pass';
}

const CHOICES: ToolChoice[] = [
  { type: 'auto' },
  { type: 'none' },
  { type: 'required' },
  { type: 'tool', name: 'get_weather' },
  { type: 'tool', name: 'get_time' },
];
const ANSWERS: Record<string, StreamEvent[]> = { prose, weather: call('get_weather'), time: call('get_time') };

describe('tool-choice filter', () => {
  it.each([
    ['auto', 'prose', 'pass'],
    ['auto', 'weather', 'pass'],
    ['none', 'prose', 'pass'],
    ['none', 'weather', 'reject: a tool was called although tool_choice is none'],
    ['required', 'prose', 'reject: tool_choice is required but no tool was called'],
    ['required', 'time', 'pass'],
    ['tool:get_weather', 'weather', 'pass'],
    ['tool:get_weather', 'prose', 'reject: tool_choice names get_weather but no tool was called'],
    ['tool:get_weather', 'time', 'reject: tool get_time called although tool_choice names get_weather'],
  ])('tool_choice %s answered with %s: %s', (choiceName, answer, expected) => {
    const choice: ToolChoice = choiceName.startsWith('tool:')
      ? { type: 'tool', name: choiceName.slice(5) }
      : ({ type: choiceName } as ToolChoice);
    expect(verdictOf(choice, ANSWERS[answer]!)).toBe(expected);
  });

  it('gives the same verdict for any split of the stream', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...CHOICES),
        fc.constantFrom(...Object.keys(ANSWERS)),
        fc.array(fc.double({ min: 0, max: 0.999, noNaN: true }), { maxLength: 6 }),
        (choice, answer, cuts) => {
          const events = ANSWERS[answer]!;
          expect(verdictOf(choice, rechunk(events, cuts))).toBe(verdictOf(choice, events));
        },
      ),
      { numRuns: 200 },
    );
  });

  it('required: prose is held, then retried; nothing of the rejected attempt is released', async () => {
    const { released, dispatcher, sink } = await runGate({
      filters: toolCallFilters(),
      scripts: [{ events: prose }, { events: call('get_time') }],
      request: request({ tools, toolChoice: { type: 'required' } }),
    });
    expect(dispatcher.attempts).toHaveLength(2);
    expect(sink.attempts[0]).toMatchObject({
      outcome: 'retried',
      filter: 'tool-choice',
      wasted: true,
      committed: false,
    });
    expect(JSON.stringify(dispatcher.attempts[1]!.request.messages.at(-1))).toMatch(
      /must call one of the available tools/,
    );
    expect(textOf(released)).toBe('Let me check.');
    expect(toolCallsOf(released)).toEqual([{ index: 0, name: 'get_time', arguments: '{}' }]);
    expect(released.at(-1)).toMatchObject({ type: 'finish', reason: 'tool_calls' });
  });

  it('a named tool answered with text every time: the gate error, and no text released (even with no other filter)', async () => {
    for (const policy of ['evidence-tail', 'passthrough'] as const) {
      const { released, dispatcher } = await runGate({
        filters: [],
        policy,
        scripts: [{ events: prose }],
        request: request({ tools, toolChoice: { type: 'tool', name: 'get_weather' } }),
      });
      expect(dispatcher.attempts).toHaveLength(3);
      expect(released).toEqual([
        {
          type: 'error',
          code: 'upstream_error',
          message:
            'model output rejected by tool-choice: tool_choice names get_weather but no tool was called (after 3 attempts)',
        },
      ]);
    }
  });

  it('none: a call is rejected and the retry answers in text', async () => {
    const { released, dispatcher } = await runGate({
      filters: [],
      scripts: [{ events: call('get_weather') }, { events: prose }],
      request: request({ tools, toolChoice: { type: 'none' } }),
      policy: 'buffered',
    });
    expect(dispatcher.attempts).toHaveLength(2);
    expect(toolCallsOf(released)).toEqual([]);
    expect(released.at(-1)).toEqual({ type: 'finish', reason: 'stop', raw: 'stop' });
  });
});

describe('finish reason from what was delivered', () => {
  it('a tool_calls label on a text answer becomes stop; a stop label after calls becomes tool_calls', async () => {
    const labelled = await runGate({
      filters: [],
      scripts: [{ events: [...prose.slice(0, -1), { type: 'finish', reason: 'tool_calls', raw: 'tool_calls' }] }],
    });
    expect(labelled.released.at(-1)).toEqual({ type: 'finish', reason: 'stop', raw: 'tool_calls' });
    const unlabelled = await runGate({
      filters: [],
      scripts: [{ events: [...call('get_time').slice(0, -1), { type: 'finish', reason: 'stop', raw: 'stop' }] }],
    });
    expect(unlabelled.released.at(-1)).toEqual({ type: 'finish', reason: 'tool_calls', raw: 'stop' });
  });
});
