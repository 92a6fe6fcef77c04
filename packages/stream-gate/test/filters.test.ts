import { createFilters } from '../src/filters/registry.js';
import { createGateFromConfig } from '../src/gate-config.js';
import { degenerationGuard } from '../src/filters/degeneration.js';
import { emptyOutputGuard } from '../src/filters/empty-output.js';
import { parseGateHeader, applyGateOverrides } from '../src/gate-header.js';
import { structuredOutput } from '../src/filters/structured-output.js';
import { DEFAULT_BUDGETS } from '../src/config.js';
import { IopError } from '@iop/core';
import type { StreamEvent } from '@iop/core';
import { fixture, request, runGate, textOf } from './helpers';

const person = {
  type: 'json_schema' as const,
  name: 'person',
  schema: {
    type: 'object',
    properties: { name: { type: 'string' }, age: { type: 'integer' } },
    required: ['name', 'age'],
  },
};

describe('structured output', () => {
  it('holds the document and retries an invalid one with a patch', async () => {
    const { released, dispatcher, committed } = await runGate({
      filters: [structuredOutput()],
      request: request({ responseFormat: person }),
      scripts: [{ events: fixture('structured-output-invalid') }, { events: fixture('structured-output-valid') }],
    });
    expect(committed).toBe(true);
    expect(dispatcher.attempts).toHaveLength(2);
    expect(JSON.stringify(dispatcher.attempts[1]!.request.messages.at(-1))).toMatch(/\/age must be integer/);
    expect(textOf(released)).toBe('{"name": "Ada", "age": 36}');
  });

  it('checks json_object and leaves text responses alone', async () => {
    const array: StreamEvent[] = [
      fixture('structured-output-valid')[0]!,
      { type: 'text-delta', text: '[1, 2]' },
      { type: 'finish', reason: 'stop', raw: 'stop' },
    ];
    const objectFormat = await runGate({
      filters: [structuredOutput()],
      request: request({ responseFormat: { type: 'json_object' } }),
      scripts: [{ events: array }],
      budgets: { maxAttempts: 1 },
    });
    expect(objectFormat.released).toEqual([
      expect.objectContaining({
        type: 'error',
        message: 'model output rejected by structured-output: the answer must be a JSON object',
      }),
    ]);
    const plain = await runGate({ filters: [structuredOutput()], scripts: [{ events: array }] });
    expect(textOf(plain.released)).toBe('[1, 2]');
  });
});

describe('degeneration', () => {
  it('rejects a loop and passes ordinary prose with repeated words', async () => {
    const loop = await runGate({
      filters: [degenerationGuard()],
      scripts: [{ events: fixture('degenerate-loop') }],
      budgets: { maxAttempts: 1 },
      policy: 'buffered',
    });
    expect(loop.released).toEqual([
      expect.objectContaining({
        type: 'error',
        message: 'model output rejected by degeneration: output repeats a 3-token unit 85 times',
      }),
    ]);
    const prose =
      'The cat sat on the mat. The dog sat on the log. '.repeat(3) + 'Then they all went home for the night. ';
    const events: StreamEvent[] = [
      fixture('degenerate-loop')[0]!,
      ...prose.match(/.{1,7}/gs)!.map((t) => ({ type: 'text-delta' as const, text: t })),
      { type: 'finish', reason: 'stop', raw: 'stop' },
    ];
    const ok = await runGate({ filters: [degenerationGuard()], scripts: [{ events }] });
    expect(textOf(ok.released)).toBe(prose);
  });

  it('catches a loop with no whitespace', async () => {
    const events: StreamEvent[] = [
      fixture('degenerate-loop')[0]!,
      ...Array.from({ length: 1000 }, () => ({ type: 'text-delta' as const, text: 'abcabcabcabcabcabc' })),
      { type: 'finish', reason: 'stop', raw: 'stop' },
    ];
    const { released } = await runGate({
      filters: [degenerationGuard()],
      scripts: [{ events }],
      budgets: { maxAttempts: 1 },
      policy: 'buffered',
    });
    expect(released[0]).toMatchObject({
      type: 'error',
      message: expect.stringMatching(/degeneration: output repeats a \d+-token unit/),
    });
  });
});

describe('empty output', () => {
  it('retries an empty answer before anything was released', async () => {
    const { released, dispatcher } = await runGate({
      filters: [emptyOutputGuard()],
      scripts: [{ events: fixture('empty-output') }, { events: fixture('structured-output-valid') }],
    });
    expect(dispatcher.attempts).toHaveLength(2);
    expect(textOf(released)).toBe('{"name": "Ada", "age": 36}');
  });
});

describe('x-iop-gate header', () => {
  it('parses policy and budgets', () => {
    expect(parseGateHeader('policy=buffered; attempts=2;total-ms=60000 ; held-bytes=1048576;')).toEqual({
      policy: 'buffered',
      maxAttempts: 2,
      maxTotalMs: 60000,
      maxHeldBytes: 1048576,
    });
  });

  it.each([
    ['policy=strict', /policy must be one of passthrough, evidence-tail, buffered/],
    ['attempts=0', /attempts must be a positive integer/],
    ['retries=2', /unknown key "retries"/],
    ['buffered', /expected key=value/],
  ])('rejects %s with a 400 naming the header', (value, message) => {
    const error = (() => {
      try {
        parseGateHeader(value);
      } catch (caught) {
        return caught;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(IopError);
    expect(error).toMatchObject({ status: 400, param: 'x-iop-gate', message: expect.stringMatching(message) });
  });

  it('may only tighten the configured budgets', () => {
    expect(applyGateOverrides('evidence-tail', DEFAULT_BUDGETS, { maxAttempts: 1, policy: 'buffered' })).toEqual({
      policy: 'buffered',
      budgets: { ...DEFAULT_BUDGETS, maxAttempts: 1 },
    });
    expect(() => applyGateOverrides('evidence-tail', DEFAULT_BUDGETS, { maxAttempts: 5 })).toThrow(
      'x-iop-gate: attempts=5 exceeds the configured limit 3',
    );
  });
});

describe('config', () => {
  it('builds filters by name and rejects unknown ones', () => {
    expect(
      createFilters([
        'reasoning',
        { name: 'text-tool-calls', options: { formats: ['hermes', 'mistral'] } },
        'tool-calls',
        'empty-output',
      ]).map((filter) => `${filter.kind}:${filter.name}`),
    ).toEqual([
      'transformer:reasoning',
      'transformer:text-tool-calls',
      'transformer:tool-call-normalizer',
      'validator:tool-calls',
      'validator:empty-output',
    ]);
    expect(() => createFilters(['reasoning', 'loops' as never])).toThrow('filters[1]: unknown filter "loops"');
    expect(() => createFilters([{ name: 'text-tool-calls', options: { formats: ['xml' as never] } }])).toThrow(
      /unknown text tool-call format "xml"/,
    );
    expect(() => createGateFromConfig({ filters: [], maxAttempts: 0 })).toThrow(
      'maxAttempts must be an integer from 1 to 10, got 0',
    );
  });
});
