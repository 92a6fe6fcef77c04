import fc from 'fast-check';
import { parseCli } from '../../src/cli.js';
import { DEFAULT_KNOBS, parseModelName, splitTokens, countTokens } from '../../src/index.js';
import { knobsFromHeaders } from '../../src/knob-specs.js';
import { buildOutputPlan, type PlanInput } from '../../src/output-plan.js';
import { seededRandom } from '../../src/prng.js';

describe('model-name suffix', () => {
  it('splits base model and knobs, flags meaning true', () => {
    expect(parseModelName('sim-model')).toEqual({ base: 'sim-model', knobs: undefined });
    expect(
      parseModelName('org/sim-model@ttft-ms=200,itl-ms=5.5,repeat,fault=cut,fault-after=3,tool-calls=auto'),
    ).toEqual({
      base: 'org/sim-model',
      knobs: { ttftMs: 200, itlMs: 5.5, repeat: true, fault: 'cut', faultAfter: 3, toolCalls: undefined },
    });
    expect(parseModelName('m@think-tags,reasoning=4').knobs).toEqual({ reasoningFormat: 'think-tags', reasoning: 4 });
    expect(parseModelName('m@xml-tool-calls=false').knobs).toEqual({ xmlToolCalls: false });
    expect(parseModelName('m@instant').knobs).toEqual({ ttftMs: 0, itlMs: 0 });
    expect(parseModelName('m@instant=false').knobs).toEqual({});
  });

  it('rejects unknown knobs, missing values and out-of-range values', () => {
    expect(() => parseModelName('m@nope=1')).toThrow("model suffix: unknown sim knob 'nope'");
    expect(() => parseModelName('m@itl-ms')).toThrow("sim knob 'itl-ms' needs a value (itl-ms=<ms>)");
    expect(() => parseModelName('m@fault-rate=1.5')).toThrow("expected a rate between 0 and 1, got '1.5'");
    expect(() => parseModelName('m@output-tokens=2.5')).toThrow('expected an integer >= 0');
    expect(() => parseModelName('m@fault=boom')).toThrow('expected one of none|403|429|500');
  });
});

describe('x-sim-* headers', () => {
  it('reads knobs from lower-cased headers and ignores the rest', () => {
    expect(knobsFromHeaders({ 'x-sim-ttft-ms': '50', 'x-sim-content': 'echo', accept: '*/*' })).toEqual({
      ttftMs: 50,
      content: 'echo',
    });
    expect(knobsFromHeaders({ accept: '*/*' })).toBeUndefined();
  });
});

describe('CLI', () => {
  it('parses server flags and knob defaults', () => {
    expect(
      parseCli([
        '--port',
        '9000',
        '--host',
        '0.0.0.0',
        '--models',
        'a, b',
        '--ttft-ms',
        '10',
        '--itl-ms',
        '2',
        '--output-tokens',
        '64',
        '--repeat',
        '--fault',
        '503',
        '--request-log-size',
        '50',
      ]),
    ).toEqual({
      help: false,
      options: {
        port: 9000,
        host: '0.0.0.0',
        models: ['a', 'b'],
        requestLogSize: 50,
        knobs: { ttftMs: 10, itlMs: 2, outputTokens: 64, repeat: true, fault: '503' },
      },
    });
    expect(parseCli(['--help'])).toEqual({ help: true });
  });

  it('parses the GPU profile flags', () => {
    expect(parseCli(['--profile', 'gpu-h100-8b', '--time-scale', '0.01', '--max-num-seqs', '8'])).toEqual({
      help: false,
      options: { knobs: {}, profile: 'gpu-h100-8b', timeScale: 0.01, profileOverrides: { maxNumSeqs: 8 } },
    });
    expect(() => parseCli(['--time-scale', '0'])).toThrow("--time-scale: expected a number > 0, got '0'");
    expect(() => parseCli(['--max-num-seqs', '8'])).toThrow('--max-num-seqs needs --profile');
  });

  it('rejects unknown flags and bad values naming them', () => {
    expect(() => parseCli(['--bogus'])).toThrow(/bogus/);
    expect(() => parseCli(['--port=-1'])).toThrow("--port: expected an integer >= 0, got '-1'");
    expect(() => parseCli(['--content', 'poem'])).toThrow("sim knob 'content'");
  });
});

describe('tokenizer', () => {
  it('splits words and punctuation with their leading whitespace', () => {
    expect(splitTokens('Hello,  world! été_1 ')).toEqual(['Hello', ',', '  world', '!', ' été_1', ' ']);
    expect(countTokens('')).toBe(0);
  });

  it('gives back the text when the tokens are joined (any text)', () => {
    fc.assert(fc.property(fc.string({ unit: 'grapheme' }), (text) => splitTokens(text).join('') === text));
  });
});

describe('output plan', () => {
  const base = (overrides: Partial<PlanInput>): PlanInput => ({
    knobs: { ...DEFAULT_KNOBS, content: 'echo' },
    random: seededRandom(1),
    maxTokens: 1000,
    echoText: '',
    tools: [],
    toolCallCount: 0,
    forcedToolName: undefined,
    stop: [],
    ...overrides,
  });

  it('cuts at a stop sequence that spans tokens, keeping the part of the token before it', () => {
    const plan = buildOutputPlan(base({ echoText: 'abc def ghi', stop: ['c de', 'ghi'] }));
    expect(plan.pieces).toEqual([{ kind: 'content', text: 'ab' }]);
    expect(plan).toMatchObject({ finishReason: 'stop', stopReason: 'c de' });
  });

  it('emits the text before the earliest stop match, which never contains a stop sequence (any text, any stops)', () => {
    const word = fc.string({ minLength: 1, maxLength: 3, unit: fc.constantFrom('a', 'b', ' ', '.') });
    fc.assert(
      fc.property(
        fc.string({ maxLength: 40, unit: fc.constantFrom('a', 'b', ' ', '.') }),
        fc.array(word, { maxLength: 3 }),
        (text, stop) => {
          const input = base({ echoText: text, stop });
          const plan = buildOutputPlan(input);
          const output = plan.pieces.map((piece) => ('text' in piece ? piece.text : '')).join('');
          let earliest: string | null = null;
          for (const sequence of stop) {
            const at = text.indexOf(sequence);
            if (at >= 0 && (earliest === null || at < text.indexOf(earliest))) earliest = sequence;
          }
          const expected = earliest === null ? text : text.slice(0, text.indexOf(earliest));
          return (
            output === expected &&
            stop.every((sequence) => !output.includes(sequence)) &&
            plan.stopReason === earliest &&
            plan.finishReason === 'stop'
          );
        },
      ),
    );
  });

  it('reports length only when the budget cut the output', () => {
    expect(buildOutputPlan(base({ echoText: 'a b c', maxTokens: 3 })).finishReason).toBe('stop');
    expect(buildOutputPlan(base({ echoText: 'a b c d', maxTokens: 3 })).finishReason).toBe('length');
  });
});
