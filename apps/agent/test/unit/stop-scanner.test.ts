import fc from 'fast-check';
import { StopScanner } from '../../src/backends/llamacpp/stop-scanner.js';

/** The text released for `chunks`, and the stop found. */
function scan(stops: string[], chunks: string[]): { text: string; stopped: string | undefined } {
  const scanner = new StopScanner(stops);
  let text = '';
  for (const chunk of chunks) text += scanner.push(chunk);
  text += scanner.end();
  return { text, stopped: scanner.stopped };
}

/** `text` cut at `cuts` (positions modulo its length). */
function split(text: string, cuts: number[]): string[] {
  const at = [...new Set(cuts.map((cut) => (text.length === 0 ? 0 : cut % (text.length + 1))))].sort((a, b) => a - b);
  const parts: string[] = [];
  let from = 0;
  for (const cut of at) {
    parts.push(text.slice(from, cut));
    from = cut;
  }
  parts.push(text.slice(from));
  return parts;
}

describe('StopScanner', () => {
  it('releases the text before the first stop sequence, for any chunking', () => {
    const alphabet = fc.constantFrom('a', 'b', ' ', 'c');
    fc.assert(
      fc.property(
        fc.string({ unit: alphabet, maxLength: 40 }),
        fc.array(fc.string({ unit: alphabet, minLength: 1, maxLength: 4 }), { maxLength: 3 }),
        fc.array(fc.nat(), { maxLength: 8 }),
        (text, stops, cuts) => {
          const positions = stops.map((stop) => text.indexOf(stop)).filter((index) => index !== -1);
          const first = positions.length === 0 ? -1 : Math.min(...positions);
          const result = scan(stops, split(text, cuts));
          expect(result.text).toBe(first === -1 ? text : text.slice(0, first));
          expect(result.stopped === undefined).toBe(first === -1);
          expect(result).toEqual(scan(stops, [text]));
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('stops at the earliest start, the shortest of stops that start there', () => {
    expect(scan(['b c', 'b'], ['b', ' c'])).toEqual({ text: '', stopped: 'b' });
    expect(scan(['b c', 'b'], ['b c'])).toEqual({ text: '', stopped: 'b' });
    expect(scan(['abcd', 'bc'], ['abc', 'd'])).toEqual({ text: '', stopped: 'abcd' });
    expect(scan(['abcd', 'bc'], ['abc'])).toEqual({ text: 'a', stopped: 'bc' });
  });

  it('holds back only what may begin a stop sequence', () => {
    const scanner = new StopScanner([' was']);
    expect(scanner.push(', there')).toBe(', there');
    expect(scanner.push(' w')).toBe('');
    expect(scanner.push('as a')).toBe('');
    expect(scanner.stopped).toBe(' was');
    const open = new StopScanner(['END']);
    expect(open.push('the E')).toBe('the ');
    expect(open.push('nd')).toBe('End');
    expect(open.end()).toBe('');
  });
});
