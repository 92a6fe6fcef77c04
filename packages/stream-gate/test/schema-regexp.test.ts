/**
 * Client schemas' regular expressions run on a linear-time engine (RE2): a catastrophic
 * pattern against an evil string must not stall the event loop, ordinary 2020-12 patterns must
 * still give the right verdicts, and a pattern RE2 cannot compile disables the check with a
 * warning instead of failing the request.
 */
import { linearRegExp } from '../src/filters/linear-regexp.js';
import { SchemaCache } from '../src/filters/schema-cache.js';
import { toolCallFilters } from '../src/filters/tool-calls.js';
import { fixture, request, runGate } from './helpers';

const EVIL_INPUT = `${'a'.repeat(30)}!`; // V8's RegExp needs 10 s+ for ^(a+)+$ on this

function compiled(schema: Record<string, unknown>) {
  const result = new SchemaCache().get(schema);
  if (!result.ok) throw new Error(`expected the schema to compile: ${result.error}`);
  return result.validate;
}

describe('linearRegExp (ajv code.regExp)', () => {
  it('matches anywhere in the input, as RegExp.prototype.test', () => {
    const rx = linearRegExp('b+c', 'u');
    expect(rx.test('abbbcd')).toBe(true);
    expect(rx.test('acd')).toBe(false);
    expect(String(rx)).toBe('/b+c/u');
  });

  it('takes ECMA-262 spellings: named groups, \\u{…}, \\d, \\p{L}, an unescaped /', () => {
    expect(linearRegExp('^(?<year>\\d{4})-\\d{2}$', 'u').test('2026-11')).toBe(true);
    expect(linearRegExp('^\\u{1F600}$', 'u').test('😀')).toBe(true);
    expect(linearRegExp('^.$', 'u').test('😀')).toBe(true); // by code point, as the u flag
    expect(linearRegExp('^\\p{L}+$', 'u').test('héllo')).toBe(true);
    expect(linearRegExp('^\\p{L}+$', 'u').test('h3llo')).toBe(false);
    expect(linearRegExp('^a/b$', 'u').test('a/b')).toBe(true);
    expect(linearRegExp('(?<=\\$)\\d+', 'u').test('cost $12')).toBe(true);
    expect(linearRegExp('(?<=\\$)\\d+', 'u').test('cost 12')).toBe(false);
  });

  it('throws, naming the pattern, on backreferences and lookaheads', () => {
    expect(() => linearRegExp('(a)\\1', 'u')).toThrow(/pattern "\(a\)\\\\1" needs a backtracking regex engine/);
    expect(() => linearRegExp('^(?=.*\\d).+$', 'u')).toThrow(/needs a backtracking regex engine/);
  });

  it('decides ^(a+)+$ on the evil input in linear time', () => {
    const rx = linearRegExp('^(a+)+$', 'u');
    const started = performance.now();
    expect(rx.test(EVIL_INPUT)).toBe(false);
    expect(rx.test('a'.repeat(100_000))).toBe(true);
    expect(rx.test(`${'a'.repeat(100_000)}!`)).toBe(false);
    expect(performance.now() - started).toBeLessThan(1000);
  });
});

describe('SchemaCache on the linear engine', () => {
  it('validates a catastrophic pattern against the evil input fast, with the right verdict', () => {
    const validate = compiled({ type: 'object', properties: { s: { type: 'string', pattern: '^(a+)+$' } } });
    const started = performance.now();
    expect(validate({ s: EVIL_INPUT })).toBe(false);
    expect(validate.errors?.[0]).toMatchObject({ keyword: 'pattern', instancePath: '/s' });
    expect(validate({ s: 'aaaaaaaa' })).toBe(true);
    expect(performance.now() - started).toBeLessThan(1000);
  });

  it('runs patternProperties and propertyNames on it too', () => {
    const validate = compiled({
      type: 'object',
      patternProperties: { '^(x+)+$': { type: 'integer' } },
      propertyNames: { pattern: '^(x+)+y?$' },
    });
    const evilKey = `${'x'.repeat(30)}!`;
    const started = performance.now();
    expect(validate({ [evilKey]: 'not checked by patternProperties' })).toBe(false); // propertyNames rejects the key
    expect(performance.now() - started).toBeLessThan(1000);
    expect(validate({ xxx: 3 })).toBe(true);
    expect(validate({ xxx: 'three' })).toBe(false);
    expect(validate({ xxy: 'three' })).toBe(true); // a name propertyNames allows, no patternProperties match
  });

  it('keeps 2020-12 pattern verdicts: match and mismatch', () => {
    const validate = compiled({
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      properties: {
        sku: { type: 'string', pattern: '^[A-Z]{3}-\\d{4}$' },
        email: { type: 'string', pattern: '^[\\w.+-]+@[\\w-]+\\.[a-z]{2,}$' },
        word: { type: 'string', pattern: 'ab' }, // unanchored: anywhere in the string
      },
      additionalProperties: false,
    });
    expect(validate({ sku: 'ABC-1234', email: 'jo.e+x@example.org', word: 'cabbage' })).toBe(true);
    expect(validate({ sku: 'ABC-12345' })).toBe(false);
    expect(validate({ sku: 'abc-1234' })).toBe(false);
    expect(validate({ email: 'not an email' })).toBe(false);
    expect(validate({ word: 'ba' })).toBe(false);
    expect(validate({ sku: 'XYZ-0000', word: 'xaby' })).toBe(true);
  });

  it('compiles and checks a schema as deep as the dialects admit (64 nested object schemas, 128 JSON levels)', () => {
    let schema: Record<string, unknown> = { type: 'string', pattern: '^(a+)+$' };
    let good: unknown = 'aaaa';
    let evil: unknown = EVIL_INPUT;
    for (let i = 0; i < 64; i++) {
      schema = { type: 'object', properties: { x: schema }, required: ['x'] };
      good = { x: good };
      evil = { x: evil };
    }
    const validate = compiled(schema);
    expect(validate(good)).toBe(true);
    expect(validate(evil)).toBe(false);
    expect(validate.errors?.[0]).toMatchObject({ keyword: 'pattern', instancePath: '/x'.repeat(64) });
  });

  it('keeps format: regex as an ECMA-262 compile check', () => {
    const validate = compiled({ type: 'string', format: 'regex' });
    expect(validate('^(?=a)a$')).toBe(true); // a lookahead is valid ECMA-262
    expect(validate('(unclosed')).toBe(false);
  });

  it('reports a schema whose pattern RE2 cannot compile as not compilable', () => {
    const result = new SchemaCache().get({
      type: 'object',
      properties: { p: { type: 'string', pattern: '^(?=.*\\d).{8,}$' } },
    });
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error).toMatch(/needs a backtracking regex engine/);
  });
});

describe('tool-call validation with a pattern RE2 cannot compile', () => {
  it('disables the check for that tool with a warning and releases the call', async () => {
    const tool = {
      name: 'get_weather',
      parameters: { type: 'object', properties: { city: { type: 'string', pattern: '^(\\w)\\1$' } } },
    };
    const { released, sink, dispatcher } = await runGate({
      filters: toolCallFilters(),
      scripts: [{ events: fixture('tool-call-valid') }],
      request: request({ tools: [tool] }),
    });
    expect(dispatcher.attempts).toHaveLength(1);
    expect(released.at(-2)).toEqual({ type: 'finish', reason: 'tool_calls', raw: 'tool_calls' });
    expect(sink.warnings).toHaveLength(1);
    expect(sink.warnings[0]!.message).toMatch(
      /schema of tool get_weather cannot be compiled, arguments not checked: .*needs a backtracking regex engine/,
    );
  });
});
