import { toolCallFilters } from '../src/filters/tool-calls.js';
import { SchemaCache } from '../src/filters/schema-cache.js';
import { fixture, request, runGate, timeTool, toolCallsOf, weatherTool } from './helpers';

const filters = toolCallFilters();
const tools = [weatherTool, timeTool];
const valid = fixture('tool-call-valid');

describe('tool-call validation', () => {
  it('releases a schema-valid call with its finish and usage', async () => {
    const { released, dispatcher } = await runGate({
      filters,
      scripts: [{ events: valid }],
      request: request({ tools }),
    });
    expect(dispatcher.attempts).toHaveLength(1);
    expect(toolCallsOf(released)).toEqual([
      { index: 0, name: 'get_weather', arguments: '{"city": "Paris", "unit": "celsius"}' },
    ]);
    expect(released.map((event) => event.type)).toEqual([
      'response-start',
      'tool-call-delta',
      'tool-call-delta',
      'tool-call-delta',
      'finish',
      'usage',
    ]);
  });

  it.each([
    ['tool-call-schema-invalid', /do not match its schema: \/unit must be equal to constant/],
    ['tool-call-bad-json', /not valid JSON/],
    ['tool-call-unknown-tool', /tool get_wether is not declared/],
  ])('rejects %s and retries with a corrective patch', async (name, reason) => {
    const { released, dispatcher, sink } = await runGate({
      filters,
      scripts: [{ events: fixture(name) }, { events: valid }],
      request: request({ tools }),
    });
    expect(dispatcher.attempts).toHaveLength(2);
    expect(sink.attempts[0]!.reason).toMatch(reason);
    expect(sink.attempts[0]).toMatchObject({
      outcome: 'retried',
      filter: 'tool-calls',
      wasted: true,
      committed: false,
    });
    const retry = dispatcher.attempts[1]!;
    expect(retry.idempotencyKey).toBe('req_test:2');
    const patch = retry.request.messages.at(-1)!;
    expect(patch.role).toBe('user');
    expect(JSON.stringify(patch.content)).toMatch(/get_we/);
    // the original request is untouched and shared, not copied
    expect(retry.request.messages[0]).toBe(dispatcher.attempts[0]!.request.messages[0]);
    expect(dispatcher.attempts[0]!.request.messages).toHaveLength(1);
    expect(toolCallsOf(released)).toEqual([
      { index: 0, name: 'get_weather', arguments: '{"city": "Paris", "unit": "celsius"}' },
    ]);
    expect(released.filter((event) => event.type === 'response-start')).toHaveLength(1);
  });

  it('normalizes empty arguments to {} and keeps parallel calls apart; stop becomes tool_calls', async () => {
    const { released } = await runGate({
      filters,
      scripts: [{ events: fixture('tool-call-parallel-empty-args') }],
      request: request({ tools }),
    });
    expect(toolCallsOf(released)).toEqual([
      { index: 0, name: 'get_time', arguments: '{}' },
      { index: 1, name: 'get_weather', arguments: '{"city":"Oslo"}' },
    ]);
    expect(released.find((event) => event.type === 'finish')).toEqual({
      type: 'finish',
      reason: 'tool_calls',
      raw: 'stop',
    });
    // the text before the calls streamed before the calls validated
    expect(released[1]).toEqual({ type: 'text-delta', text: 'Checking both.' });
  });

  it('respects tool_choice required, a named tool and none', async () => {
    const text = [
      valid[0]!,
      { type: 'text-delta' as const, text: 'It is sunny.' },
      { type: 'finish' as const, reason: 'stop' as const, raw: 'stop' },
    ];
    const required = await runGate({
      filters,
      scripts: [{ events: text }],
      request: request({ tools, toolChoice: { type: 'required' } }),
      budgets: { maxAttempts: 1 },
      policy: 'buffered',
    });
    expect(required.released).toEqual([
      {
        type: 'error',
        code: 'upstream_error',
        message: 'model output rejected by tool-choice: tool_choice is required but no tool was called',
      },
    ]);
    const named = await runGate({
      filters,
      scripts: [{ events: valid }],
      request: request({ tools, toolChoice: { type: 'tool', name: 'get_time' } }),
      budgets: { maxAttempts: 1 },
    });
    expect(named.released.at(-1)).toMatchObject({
      type: 'error',
      message: expect.stringMatching(/tool_choice names get_time/),
    });
    const none = await runGate({
      filters,
      scripts: [{ events: valid }, { events: text }],
      request: request({ tools, toolChoice: { type: 'none' } }),
    });
    expect(none.dispatcher.attempts).toHaveLength(2);
    expect(none.released.map((event) => event.type)).toEqual(['response-start', 'text-delta', 'finish']);
  });

  it('checks real-client 2020-12 schemas: propertyNames, format, pattern', async () => {
    const tool = {
      name: 'schedule',
      parameters: {
        $schema: 'https://json-schema.org/draft/2020-12/schema',
        type: 'object',
        properties: {
          at: { type: 'string', format: 'date-time' },
          room: { type: 'string', pattern: '^[A-Z][0-9]{3}$' },
          tags: { type: 'object', propertyNames: { pattern: '^[a-z]+$' } },
        },
        required: ['at'],
      },
    };
    const call = (args: string) => [
      valid[0]!,
      { type: 'tool-call-delta' as const, index: 0, id: 'call_s', name: 'schedule', argumentsDelta: args },
      { type: 'finish' as const, reason: 'tool_calls' as const, raw: 'tool_calls' },
    ];
    for (const [args, ok] of [
      ['{"at":"2026-01-05T10:00:00Z","room":"B204","tags":{"team":1}}', true],
      ['{"at":"next tuesday"}', false],
      ['{"at":"2026-01-05T10:00:00Z","room":"b204"}', false],
      ['{"at":"2026-01-05T10:00:00Z","tags":{"Team":1}}', false],
    ] as const) {
      const { released } = await runGate({
        filters,
        scripts: [{ events: call(args) }],
        request: request({ tools: [tool] }),
        budgets: { maxAttempts: 1 },
      });
      expect(released.at(-1)!.type).toBe(ok ? 'finish' : 'error');
    }
  });

  it('disables the check for a schema ajv cannot compile, with a warning', async () => {
    const broken = {
      name: 'get_weather',
      parameters: { type: 'object', properties: { city: { $ref: '#/$defs/missing' } } },
    };
    const { released, sink } = await runGate({
      filters,
      scripts: [{ events: fixture('tool-call-schema-invalid') }],
      request: request({ tools: [broken] }),
    });
    expect(released.at(-2)).toEqual({ type: 'finish', reason: 'tool_calls', raw: 'tool_calls' });
    expect(sink.warnings).toHaveLength(1);
    expect(sink.warnings[0]!.message).toMatch(/schema of tool get_weather cannot be compiled/);
  });

  it('accepts draft-07 schemas and compiles each schema once', () => {
    const cache = new SchemaCache(2);
    const schema = {
      $schema: 'http://json-schema.org/draft-07/schema#',
      type: 'object',
      properties: { n: { type: 'integer' } },
    };
    const first = cache.get(schema);
    expect(first.ok).toBe(true);
    expect(cache.get(schema)).toBe(first);
    expect(cache.get(JSON.parse(JSON.stringify(schema)) as Record<string, unknown>)).toBe(first);
    if (first.ok) expect(first.validate({ n: 1.5 })).toBe(false);
  });
});
